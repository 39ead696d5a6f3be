/// How one transaction compares between the ledger and a provider's list.
public enum ReconciliationResult: String, Sendable, Hashable, CaseIterable {
    case matched
    /// Paid at the provider, but unknown here or not granted here: a lost order.
    case missingInLedger = "missing_in_ledger"
    /// Granted here in the period, absent from the provider's list.
    case missingAtProvider = "missing_at_provider"
    case amountMismatch = "amount_mismatch"
    case productMismatch = "product_mismatch"
    /// Refunded at the provider and still granted here, or refunded here and paid there.
    case statusMismatch = "status_mismatch"
    /// A line of the file that could not be read (its line number and why are reported).
    case malformed

    /// The ledger's side of a transaction: the order that holds it.
    public struct LedgerSide: Sendable, Hashable {
        public var orderId: String
        public var state: OrderState
        public var productId: String
        public var amount: Money

        public init(orderId: String, state: OrderState, productId: String, amount: Money) {
            self.orderId = orderId
            self.state = state
            self.productId = productId
            self.amount = amount
        }
    }

    /// The rule, as a table: credited here (granted or finished), refunded here, or neither — against paid or
    /// refunded there. Nil provider side: the transaction is not in the file.
    public static func classify(ledger: LedgerSide?, provider: ProviderTransaction?) -> ReconciliationResult {
        guard let provider else { return .missingAtProvider }
        let credited = ledger.map { [.granted, .finished].contains($0.state) } ?? false
        let refunded = ledger?.state == .refunded
        switch (provider.status, credited, refunded) {
        case (.paid, true, _), (.refunded, _, true):
            guard let ledger else { return .missingInLedger }
            if ledger.productId != provider.productId { return .productMismatch }
            if ledger.amount != provider.amount { return .amountMismatch }
            return .matched
        case (.paid, false, true), (.refunded, true, _):
            return .statusMismatch
        case (.paid, false, false), (.refunded, false, false):
            return .missingInLedger
        }
    }
}
