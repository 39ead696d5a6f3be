/// A comma-separated list of names (`day,product`, `lost_order,refused_grant`) read into values, so the API and the
/// CLI refuse an unknown name with the same words.
public enum NameList {
    public static func parse<Value: RawRepresentable<String> & CaseIterable>(
        _ text: String, as type: Value.Type
    ) throws(UnknownName) -> [Value] {
        try text.split(separator: ",").map { (name) throws(UnknownName) -> Value in
            guard let value = Value(rawValue: String(name)) else {
                throw UnknownName(name: String(name), known: Value.allCases.map(\.rawValue))
            }
            return value
        }
    }
}

/// A name a list does not know, with the names it does.
public struct UnknownName: Error, Sendable, CustomStringConvertible {
    public let name: String
    public let known: [String]
    public var description: String { "\(name) is not one of " + known.joined(separator: ", ") }
}
