/// One member of a JSON object as it was written: its name, its value, and where the value's text lies in the bytes
/// it was parsed from. What a signature over a member's text needs: the bytes that are hashed and the value that is
/// read are one and the same (`JSONValue.members(parsingObject:)`).
public struct JSONMember: Sendable, Hashable {
    public let name: String
    public let value: JSONValue
    /// The value's text: `bytes[self.bytes]` of what was parsed, from its first byte to its last, no whitespace around.
    public let bytes: Range<Int>
}

extension JSONValue {
    /// The top-level members of the JSON object `bytes` holds, in their order, each with its value's byte range; a
    /// name given twice is listed twice, so the caller can refuse it (nothing is silently the first or the last).
    /// Throws a `JSONSyntaxError` when the bytes are not exactly one JSON value, as strict as `init(parsing:)`;
    /// nil when the value is not an object.
    public static func members(parsingObject bytes: [UInt8]) throws -> [JSONMember]? {
        try JSONParser.parseMemberSpans(bytes)
    }
}
