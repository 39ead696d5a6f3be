/// A comma-separated list of names (`day,product`, `lost_order,refused_grant`) read into values, so the API and the
/// CLI refuse a bad list with the same words.
///
/// Every name must be known, non-empty and given once: `product,product` or `day,,product` is a mistake in the
/// caller's request, not a list to be guessed at (and a repeated dimension once crashed the revenue report).
/// An empty text is an empty list: the caller named nothing.
public enum NameList {
    public static func parse<Value: RawRepresentable<String> & CaseIterable & Hashable>(
        _ text: String, as type: Value.Type
    ) throws(NameListError) -> [Value] {
        guard !text.isEmpty else { return [] }
        var values: [Value] = []
        var seen: Set<Value> = []
        for name in text.split(separator: ",", omittingEmptySubsequences: false).map(String.init) {
            guard !name.isEmpty else { throw .emptyName }
            guard let value = Value(rawValue: name) else {
                throw .unknown(name: name, known: Value.allCases.map(\.rawValue))
            }
            guard seen.insert(value).inserted else { throw .repeated(name: name) }
            values.append(value)
        }
        return values
    }
}

/// Why a list of names was refused; the description is the message both the API and the CLI print after the
/// parameter's or option's name.
public enum NameListError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A name the list does not know, with the names it does.
    case unknown(name: String, known: [String])
    /// A name given more than once.
    case repeated(name: String)
    /// Two commas in a row, or a comma at either end.
    case emptyName

    public var description: String {
        switch self {
        case .unknown(let name, let known): "\(name) is not one of " + known.joined(separator: ", ")
        case .repeated(let name): "\(name) is named more than once; name each at most once"
        case .emptyName: "a name is empty (two commas in a row, or a comma at either end); separate names with single commas"
        }
    }
}
