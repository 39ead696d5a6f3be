import Foundation
import LedgerCore

extension Ledger {
    /// Each of the order's events with its hash and whether the chain holds up to it, as `ledger verify` checks it;
    /// empty when the order has no events.
    public func chain(ofOrder orderId: String) async throws -> [ChainLink] {
        try await AuditLog(client: client, logger: store.logger).chain(of: .order(orderId))
    }

    /// What was refused for the order, newest first, at most `limit`.
    public func refusals(ofOrder orderId: String, limit: Int) async throws -> [RecordedRefusal] {
        try await RefusalLog(client: client, logger: store.logger).refusals(ofOrder: orderId, limit: limit)
    }

    /// The global feed: at most `limit` events after `position` in commit order (see `EventStore.readAll`).
    public func feed(after position: Int64?, limit: Int) async throws -> [StoredEvent] {
        try await store.readAll(after: position, limit: limit)
    }
}
