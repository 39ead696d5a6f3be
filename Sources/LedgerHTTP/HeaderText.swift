extension Substring {
    /// Without the spaces and tabs around it: HTTP's optional whitespace in a header value (RFC 9110 §5.6.3). By hand:
    /// Foundation's trim, with its character sets, cost more than the rest of a bearer token's check.
    var trimmingOptionalWhitespace: Substring {
        var text = self
        while text.first == " " || text.first == "\t" { text.removeFirst() }
        while text.last == " " || text.last == "\t" { text.removeLast() }
        return text
    }
}
