import Foundation
import LedgerCore
import PostgresNIO

extension Ledger {
    /// The order each of `transactionIds` belongs to (`order_transactions`), for those that belong to one: what an
    /// older app's receipt listing several purchases is matched against (`ReceiptPurchaseChoice`). Read on the
    /// primary, where the bindings are decided; a binding made after this read still wins over the append that
    /// chose from it (the append is refused `transaction_bound_elsewhere`, and the route chooses again).
    public func boundOrders(of transactionIds: [String]) async throws -> [String: String] {
        guard !transactionIds.isEmpty else { return [:] }
        return try await client.query(
            "SELECT transaction_id, order_id FROM order_transactions WHERE transaction_id = ANY(\(transactionIds)::text[])",
            .reads, logger: store.logger
        ) { rows in
            var bound: [String: String] = [:]
            for try await (transactionId, orderId) in rows.decode((String, String).self) { bound[transactionId] = orderId }
            return bound
        }
    }
}
