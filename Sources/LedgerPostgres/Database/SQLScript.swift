import Foundation

/// Splits a SQL file into its statements. PostgresNIO speaks only the extended query protocol, which takes one
/// statement at a time, so a migration file is run statement by statement (inside one transaction).
///
/// A `;` ends a statement unless it is inside a 'string', a "quoted identifier", a $tag$ dollar-quoted body $tag$,
/// a -- line comment or a /* block comment */. Statements that are only whitespace and comments are dropped.
enum SQLScript {
    static func statements(_ sql: String) -> [String] {
        let text = Array(sql.unicodeScalars)
        var statements: [String] = []
        var start = 0
        var index = 0
        var hasCode = false
        func finish(upTo end: Int) {
            if hasCode { statements.append(String(String.UnicodeScalarView(text[start..<end])).trimmingCharacters(in: .whitespacesAndNewlines)) }
            start = end + 1
            hasCode = false
        }
        while index < text.count {
            let scalar = text[index]
            switch scalar {
            case "-" where next(text, index) == "-":
                index = text[index...].firstIndex(of: "\n") ?? text.count
                continue
            case "/" where next(text, index) == "*":
                index = closing(text, from: index + 2, of: ["*", "/"]) ?? text.count
                continue
            case "'", "\"":
                index = closing(text, from: index + 1, of: [scalar]) ?? text.count
                hasCode = true
                continue
            case "$":
                if let tag = dollarTag(text, at: index) {
                    index = closing(text, from: index + tag.count, of: tag) ?? text.count
                    hasCode = true
                    continue
                }
                hasCode = true
            case ";":
                finish(upTo: index)
            default:
                if !scalar.properties.isWhitespace { hasCode = true }
            }
            index += 1
        }
        finish(upTo: text.count)
        return statements
    }

    private static func next(_ text: [Unicode.Scalar], _ index: Int) -> Unicode.Scalar? {
        index + 1 < text.count ? text[index + 1] : nil
    }

    /// The index just past the first `terminator` at or after `from`. A doubled quote ('' or "") is found as two
    /// closings in a row, which reads the same: the string simply continues.
    private static func closing(_ text: [Unicode.Scalar], from: Int, of terminator: [Unicode.Scalar]) -> Int? {
        var index = from
        while index + terminator.count <= text.count {
            if Array(text[index..<index + terminator.count]) == terminator { return index + terminator.count }
            index += 1
        }
        return nil
    }

    /// `$$` or `$name$` starting at `index`, or nil when the `$` starts no dollar quote (e.g. a `$1` parameter).
    private static func dollarTag(_ text: [Unicode.Scalar], at index: Int) -> [Unicode.Scalar]? {
        var end = index + 1
        while end < text.count, text[end] == "_" || text[end].properties.isAlphabetic
            || (end > index + 1 && ("0"..."9").contains(text[end])) {
            end += 1
        }
        guard end < text.count, text[end] == "$" else { return nil }
        return Array(text[index...end])
    }
}
