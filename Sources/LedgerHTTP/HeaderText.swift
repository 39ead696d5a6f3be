import HTTPTypes
import NIOHTTP1

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

extension StringProtocol {
    /// Whether this is `lowercase` in any letter case (header names, schemes and media types are case-insensitive),
    /// compared byte by byte: `lowercased()` made a new string on every request.
    func equalsIgnoringASCIICase(_ lowercase: String) -> Bool {
        utf8.equalsIgnoringASCIICase(lowercase)
    }
}

extension Collection<UInt8> {
    /// Whether these bytes are `lowercase` in any letter case.
    func equalsIgnoringASCIICase(_ lowercase: String) -> Bool {
        count == lowercase.utf8.count
            && zip(self, lowercase.utf8).allSatisfy { byte, expected in
                (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte | 0x20 == expected : byte == expected
            }
    }
}

extension HTTPFields {
    /// `self[name]` — the field's value, its values joined with ", " when it is given more than once — without the
    /// generic join for a field given once, as nearly every one is: the join cost more than the rest of a bearer
    /// token's check.
    func value(of name: HTTPField.Name) -> String? {
        guard let first = firstIndex(where: { $0.name == name }) else { return nil }
        if self[index(after: first)...].contains(where: { $0.name == name }) { return self[name] }
        return self[first].value
    }
}

extension HTTPHeaders {
    /// The field's value as `HTTPFields.value(of:)` reads it — the name in any case, the values joined with ", " when
    /// it is given more than once — for the headers as NIO's parser gave them (`HistoryLane`).
    func value(of field: HTTPField.Name) -> String? {
        var found: String?
        for (name, value) in self where name.equalsIgnoringASCIICase(field.canonicalName) {
            found = found.map { "\($0), \(value)" } ?? value
        }
        return found
    }
}

extension StringProtocol where SubSequence == Substring {
    /// Whether a `Content-Type` value or an `Accept` range names the media type `lowercase`, whatever its parameters
    /// (`text/csv; charset=utf-8` is `text/csv`).
    func hasMediaType(_ lowercase: String) -> Bool {
        prefix { $0 != ";" }.trimmingOptionalWhitespace.equalsIgnoringASCIICase(lowercase)
    }
}

extension StringProtocol where SubSequence == Substring {
    /// The `charset` parameter of a `Content-Type` value (unquoted), or nil without one.
    var charsetParameter: Substring? {
        for parameter in split(separator: ";").dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1)
            guard pair.count == 2, pair[0].trimmingOptionalWhitespace.equalsIgnoringASCIICase("charset") else { continue }
            var value = pair[1].trimmingOptionalWhitespace
            if value.count >= 2, value.first == "\"", value.last == "\"" { value = value.dropFirst().dropLast() }
            return value
        }
        return nil
    }
}
