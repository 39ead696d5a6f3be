import LedgerCore

/// Periods written as literals in tests: "2026-11-01", "2026-11-01T08:00:00Z". A literal that is neither is a
/// mistake in the test, and fails it at once.
extension PeriodBound: ExpressibleByStringLiteral {
    public init(stringLiteral text: String) {
        guard let bound = PeriodBound(text) else { fatalError("not a period bound: \(text)") }
        self = bound
    }
}
