import LedgerCore

/// An `application/x-www-form-urlencoded` body decoded into bytes per key, with the rules a signed notification
/// needs that a lenient web parser does not have: a key may occur once only (otherwise which value was signed
/// is ambiguous), and a malformed `%` escape or a pair without `=` is an error, not a guess.
struct FormURLEncoded {
    enum Failure: Error, Equatable {
        /// A non-empty `&`-separated segment without `=`.
        case pairWithoutEquals
        /// `%` not followed by two hex digits.
        case malformedPercentEscape
        /// A key occurs more than once (its raw, still-encoded form given).
        case duplicateKey([UInt8])
    }

    /// Decoded (key bytes, value bytes) in body order.
    let pairs: [(key: [UInt8], value: [UInt8])]

    init(_ body: some Collection<UInt8>) throws(Failure) {
        var pairs: [(key: [UInt8], value: [UInt8])] = []
        var seen: Set<[UInt8]> = []
        for segment in body.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            guard let equals = segment.firstIndex(of: UInt8(ascii: "=")) else { throw .pairWithoutEquals }
            let key = try Self.percentDecode(segment[segment.startIndex..<equals])
            let value = try Self.percentDecode(segment[segment.index(after: equals)...])
            guard seen.insert(key).inserted else { throw .duplicateKey(key) }
            pairs.append((key, value))
        }
        self.pairs = pairs
    }

    /// `+` is a space; `%XY` is the byte 0xXY; every other byte stands for itself.
    static func percentDecode(_ bytes: some Collection<UInt8>) throws(Failure) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var iterator = bytes.makeIterator()
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "+"):
                output.append(UInt8(ascii: " "))
            case UInt8(ascii: "%"):
                guard let high = iterator.next()?.hexDigitValue, let low = iterator.next()?.hexDigitValue else {
                    throw .malformedPercentEscape
                }
                output.append(high << 4 | low)
            default:
                output.append(byte)
            }
        }
        return output
    }
}
