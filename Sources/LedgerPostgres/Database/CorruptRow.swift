/// A projection row holding a value the domain does not know: the schema and the code disagree.
struct CorruptRow: Error, CustomStringConvertible {
    let column: String
    let value: String
    var description: String { "projection column \(column) holds unknown value \(value)" }
}
