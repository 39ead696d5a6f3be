/// Decimal amounts as the Chinese providers write them ("12.34" yuan) turned into integer minor units (fen)
/// by reading the digits, never through a floating-point number, so 0.1 + 0.2 problems cannot reach the ledger.
public enum DecimalAmount {
    /// Minor units of a two-decimal currency: `"12.34"` → 1234, `"12.3"` → 1230, `"12"` → 1200, `"0.01"` → 1.
    /// Refused (nil): empty, a sign, an exponent, more than two decimals, a lone or trailing point, leading zeros
    /// (`"012"`), spaces, anything but ASCII digits and one point, or a value beyond 15 integer digits.
    public static func minorUnits(_ text: String) -> Int64? {
        let bytes = Array(text.utf8)
        let point = bytes.firstIndex(of: UInt8(ascii: "."))
        let integerDigits = bytes[..<(point ?? bytes.endIndex)]
        let fractionDigits = point.map { bytes[($0 + 1)...] } ?? []
        guard (1...15).contains(integerDigits.count),
              integerDigits.allSatisfy(isDigit),
              integerDigits.count == 1 || integerDigits.first != UInt8(ascii: "0"),
              point == nil || (1...2).contains(fractionDigits.count),
              fractionDigits.allSatisfy(isDigit)
        else { return nil }
        var value: Int64 = 0
        for digit in integerDigits { value = value * 10 + Int64(digit - UInt8(ascii: "0")) }
        var fraction: Int64 = 0
        for index in 0..<2 {
            let digit = index < fractionDigits.count ? Int64(fractionDigits[fractionDigits.startIndex + index] - UInt8(ascii: "0")) : 0
            fraction = fraction * 10 + digit
        }
        // 15 digits × 100 stays far below Int64.max; no overflow is possible.
        return value * 100 + fraction
    }

    static func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }
}
