/// Money as people read it: the minor units placed by the currency's ISO 4217 exponent, thousands grouped with
/// commas, the code after the amount: 499 USD minor units are "4.99 USD", 1200 JPY "1,200 JPY", 1000 KWD "1.000 KWD".
/// The API, `--json` and CSV columns named `…_minor` keep integer minor units; this is for tables, the console and
/// CSV meant for people.
public enum CurrencyExponent {
    /// ISO 4217 minor-unit exponents other than 2 (every other code is 2).
    public static let exceptions: [String: Int] = [
        "BIF": 0, "CLP": 0, "DJF": 0, "GNF": 0, "ISK": 0, "JPY": 0, "KMF": 0, "KRW": 0, "PYG": 0, "RWF": 0,
        "UGX": 0, "UYI": 0, "VND": 0, "VUV": 0, "XAF": 0, "XOF": 0, "XPF": 0,
        "BHD": 3, "IQD": 3, "JOD": 3, "KWD": 3, "LYD": 3, "OMR": 3, "TND": 3,
        "CLF": 4, "UYW": 4,
    ]

    /// How many digits of `currency`'s amounts follow the decimal point.
    public static func of(_ currency: String) -> Int { exceptions[currency] ?? 2 }
}

extension Money {
    /// "4.99 USD", "1,200 JPY", "-0.05 EUR" (a net can be negative).
    public var formatted: String { "\(Self.formatted(minorUnits: value, currency: currency)) \(currency)" }

    /// The amount alone, without its code: "4.99", "1,200".
    public static func formatted(minorUnits: Int64, currency: String) -> String {
        let exponent = CurrencyExponent.of(currency)
        let digits = Array(String(minorUnits.magnitude))
        let padded = Array(repeating: Character("0"), count: max(0, exponent + 1 - digits.count)) + digits
        let whole = padded.dropLast(exponent)
        var grouped = ""
        for (index, digit) in whole.enumerated() {
            if index > 0, (whole.count - index) % 3 == 0 { grouped.append(",") }
            grouped.append(digit)
        }
        let fraction = exponent > 0 ? "." + String(padded.suffix(exponent)) : ""
        return (minorUnits < 0 ? "-" : "") + grouped + fraction
    }
}
