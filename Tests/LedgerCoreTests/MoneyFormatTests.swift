import LedgerCore
import Testing

/// Money as people read it, by each currency's ISO 4217 exponent.
@Suite("Money shown as money")
struct MoneyFormatTests {
    @Test(arguments: [
        (Money(value: 499, currency: "USD"), "4.99 USD"), (Money(value: 1200, currency: "JPY"), "1,200 JPY"),
        (Money(value: 1000, currency: "KWD"), "1.000 KWD"), (Money(value: 5, currency: "EUR"), "0.05 EUR"),
        (Money(value: 0, currency: "CNY"), "0.00 CNY"), (Money(value: 123_456_789, currency: "USD"), "1,234,567.89 USD"),
        (Money(value: -5, currency: "EUR"), "-0.05 EUR"), (Money(value: 1_000_000, currency: "KRW"), "1,000,000 KRW"),
        (Money(value: 12_345, currency: "CLF"), "1.2345 CLF"), (Money(value: 100, currency: "XYZ"), "1.00 XYZ"),
        (Money(value: Money.maximumValue, currency: "USD"), "10,000,000,000.00 USD"),
    ])
    func amountsAreWrittenByTheirCurrencysExponent(money: Money, shown: String) {
        #expect(money.formatted == shown)
    }

    @Test func theExponentsAreISO4217s() {
        #expect(CurrencyExponent.of("USD") == 2 && CurrencyExponent.of("JPY") == 0 && CurrencyExponent.of("BHD") == 3)
        #expect(CurrencyExponent.of("UYW") == 4)
    }
}
