/// PostgreSQL's text form of a `text[]` value, every element quoted: for binds that carry an array as text (a
/// `COPY` field, an element of the grouped append's `text[]` of arrays), cast back with `::text[]`.
enum ArrayLiteral {
    static func text(_ elements: [String]) -> String {
        let quoted = elements.map { element in
            "\"" + element.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
        }
        return "{" + quoted.joined(separator: ",") + "}"
    }
}
