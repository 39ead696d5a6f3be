import Foundation
import LedgerCore
@testable import LedgerPostgres

/// Records an order of `failures + 6` events: created, queued, a receipt, `failures` retryable verification
/// failures, then verified, granted and finished; event by event, or in one append.
public func recordLongOrder(_ orderId: String, failures: Int, on ledger: Ledger, oneAppend: Bool = false) async throws {
    let lifecycle = Lifecycle()
    let events = [lifecycle.created, lifecycle.queued, lifecycle.receipt]
        + (0..<failures).map { _ in lifecycle.verificationFailed(retryable: true) }
        + [lifecycle.verified, lifecycle.granted(), lifecycle.finished]
    let metadata = EventMetadata(actor: "test")
    if oneAppend {
        _ = try await ledger.record(orderId: orderId, events: events, metadata: metadata)
    } else {
        for event in events { _ = try await ledger.record(orderId: orderId, events: [event], metadata: metadata) }
    }
}
