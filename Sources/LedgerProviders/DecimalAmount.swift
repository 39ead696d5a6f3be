import LedgerCore

/// Decimal amounts as the Chinese providers write them ("12.34" yuan) turned into integer minor units (fen)
/// by reading the digits, never through a floating-point number, so 0.1 + 0.2 problems cannot reach the ledger.
public enum DecimalAmount {
    /// Minor units of a two-decimal currency: `"12.34"` → 1234, `"12.3"` → 1230, `"12"` → 1200, `"0.01"` → 1.
    /// Refused (nil): empty, a sign, an exponent, more than two decimals, a lone or trailing point, leading zeros
    /// (`"012"`), spaces, anything but ASCII digits and one point, or a value beyond 15 integer digits.
    public static func minorUnits(_ text: String) -> Int64? {
        minorUnits(text, exponent: 2)
    }

    /// Minor units of `currency`, by its ISO 4217 exponent (`CurrencyExponent`): `"500"` JPY → 500, `"1.234"` KWD →
    /// 1234, `"4.99"` USD → 499. Alipay writes amounts with up to two decimals whatever the currency, so a currency
    /// with fewer (JPY) takes `"500.00"` as 500; a digit past the currency's exponent that is not zero (`"500.50"` JPY)
    /// is not an amount of that currency and is refused, as is everything `minorUnits(_:)` refuses.
    public static func minorUnits(_ text: String, currency: String) -> Int64? {
        minorUnits(text, exponent: CurrencyExponent.of(currency))
    }

    static func minorUnits(_ text: String, exponent: Int) -> Int64? {
        let bytes = Array(text.utf8)
        let point = bytes.firstIndex(of: UInt8(ascii: "."))
        let integerDigits = bytes[..<(point ?? bytes.endIndex)]
        let fractionDigits = point.map { bytes[($0 + 1)...] } ?? []
        guard (0...4).contains(exponent),
              (1...15).contains(integerDigits.count),
              integerDigits.allSatisfy(isDigit),
              integerDigits.count == 1 || integerDigits.first != UInt8(ascii: "0"),
              point == nil || (1...max(2, exponent)).contains(fractionDigits.count),
              fractionDigits.allSatisfy(isDigit),
              fractionDigits.dropFirst(exponent).allSatisfy({ $0 == UInt8(ascii: "0") })
        else { return nil }
        var value: Int64 = 0
        for digit in integerDigits { value = value * 10 + Int64(digit - UInt8(ascii: "0")) }
        var fraction: Int64 = 0, scale: Int64 = 1
        for index in 0..<exponent {
            let digit = index < fractionDigits.count ? Int64(fractionDigits[fractionDigits.startIndex + index] - UInt8(ascii: "0")) : 0
            fraction = fraction * 10 + digit
            scale *= 10
        }
        // 15 digits × 10^4 passes Int64.max: refused rather than wrapped.
        let (scaled, overflow) = value.multipliedReportingOverflow(by: scale)
        guard !overflow else { return nil }
        return scaled + fraction
    }

    static func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }
}
