import Foundation

/// A JSON value as posted and as stored: one tree type for the whole ledger, whose integers stay exact `Int64`s
/// (money in minor units must never pass through a `Double`).
public enum JSONValue: Sendable, Hashable, Codable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// Tries the narrow types first, so `true` stays `.bool` and `7` stays `.int`; numbers that are not exact
    /// `Int64`s (1.5, 1e30) become `.double`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .int(value)
        } else if let value = try? container.decode(Double.self) {
            self = .double(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .int(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}

extension JSONValue {
    /// Parses JSON text (UTF-8); throws a `JSONSyntaxError` when the bytes are not exactly one JSON value
    /// (see `JSONParser` for how strict that is).
    public init(parsing bytes: some Collection<UInt8>) throws {
        self = try JSONParser.parse(Array(bytes))
    }

    /// Parses JSON that comes in (a request body): as `init(parsing:)`, and every string must be stream-safe
    /// (`StreamSafeText`), so that nothing downstream spends more than linear time comparing or hashing it.
    public init(parsingIncoming bytes: some Collection<UInt8>) throws {
        self = try JSONParser.parse(Array(bytes), streamSafe: true)
    }

    /// The member `key` of an object; nil when absent or when this is not an object.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members[key]
    }

    /// The elements of an array; empty when this is not an array.
    public var elements: [JSONValue] {
        guard case .array(let elements) = self else { return [] }
        return elements
    }

    /// Canonical JSON text: keys sorted by their UTF-8 bytes, no whitespace, minimal escaping, integers in
    /// decimal, doubles in Swift's shortest form (non-finite doubles, which JSON cannot hold, as `null`).
    /// What the ledger stores, hashes and compares, so it must be the same bytes for the same value, always.
    public var canonicalJSON: String {
        String(decoding: canonicalBytes, as: UTF8.self)
    }

    /// The canonical JSON text's UTF-8 bytes, written directly: every append writes its events several times
    /// (idempotency check, insert, seal), so this is on the hot path.
    public var canonicalBytes: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(256)
        write(to: &bytes)
        return bytes
    }

    func write(to bytes: inout [UInt8]) {
        switch self {
        case .null:
            bytes.append(contentsOf: "null".utf8)
        case .bool(let value):
            bytes.append(contentsOf: (value ? "true" : "false").utf8)
        case .int(let value):
            Self.writeInteger(value, to: &bytes)
        case .double(let value):
            bytes.append(contentsOf: (value.isFinite ? "\(value)" : "null").utf8)
        case .string(let value):
            Self.writeString(value, to: &bytes)
        case .array(let elements):
            bytes.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                element.write(to: &bytes)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let members):
            bytes.append(UInt8(ascii: "{"))
            let sorted = members.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
            for (index, member) in sorted.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                Self.writeString(member.key, to: &bytes)
                bytes.append(UInt8(ascii: ":"))
                member.value.write(to: &bytes)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    /// Escapes only what JSON requires: the quote, the backslash and control characters below U+0020. Works on
    /// UTF-8 bytes (every byte of a multi-byte character is 0x80 or above, so none is escaped) and copies the runs
    /// between escapes whole.
    static func writeString(_ value: String, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        var value = value
        value.withUTF8 { text in
            var runStart = 0
            for index in text.indices where text[index] < 0x20 || text[index] == UInt8(ascii: "\"") || text[index] == UInt8(ascii: "\\") {
                bytes.append(contentsOf: text[runStart..<index])
                bytes.append(contentsOf: escape(text[index]))
                runStart = index + 1
            }
            bytes.append(contentsOf: text[runStart...])
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// Decimal digits, as `String(value)` prints them, without making the string (JSON, and the rebuild's rows).
    public static func writeInteger(_ value: Int64, to bytes: inout [UInt8]) {
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        var rest = value.magnitude
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var count = 0
            repeat {
                digits[count] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
                count += 1
            } while rest > 0
            for index in (0..<count).reversed() { bytes.append(digits[index]) }
        }
    }

    private static func escape(_ byte: UInt8) -> [UInt8] {
        switch byte {
        case UInt8(ascii: "\""): Array(#"\""#.utf8)
        case UInt8(ascii: "\\"): Array(#"\\"#.utf8)
        case UInt8(ascii: "\n"): Array(#"\n"#.utf8)
        case UInt8(ascii: "\r"): Array(#"\r"#.utf8)
        case UInt8(ascii: "\t"): Array(#"\t"#.utf8)
        case 0x08: Array(#"\b"#.utf8)
        case 0x0C: Array(#"\f"#.utf8)
        default: Array(#"\u00"#.utf8) + [hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 0x0F)]]
        }
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)
}

// Literals, so tests and handlers can write `["value": 499, "currency": "USD"]` as a JSONValue.
extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}
