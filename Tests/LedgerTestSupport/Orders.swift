import Foundation
import LedgerCore
@testable import LedgerPostgres
import PostgresNIO

/// Records `count` orders through the ledger, each its whole happy path event by event; returns their ids.
@discardableResult
public func recordHappyOrders(_ count: Int, prefix: String = "order", on ledger: Ledger) async throws -> [String] {
    let metadata = EventMetadata(actor: "test-suite", requestId: nil)
    var ids: [String] = []
    for n in 0..<count {
        let orderId = "\(prefix)-\(n)"
        for event in Lifecycle().happyPath {
            _ = try await ledger.record(orderId: orderId, events: [event], metadata: metadata)
        }
        ids.append(orderId)
    }
    return ids
}

/// Runs statements as the superuser with the append-only trigger switched off: how the tamper tests play the
/// attacker the audit must catch.
public func tamper(_ client: SessionPool, _ statements: [PostgresQuery]) async throws {
    try await client.withTransaction(logger: .init(label: "tamper")) { connection in
        try await connection.query("ALTER TABLE events DISABLE TRIGGER events_append_only", logger: .init(label: "tamper"))
        for statement in statements { try await connection.query(statement, logger: .init(label: "tamper")) }
        try await connection.query("ALTER TABLE events ENABLE TRIGGER events_append_only", logger: .init(label: "tamper"))
    }
}

/// Seals until the digest covers `events` events (or 120 s pass). Sealing stops below the oldest transaction open
/// anywhere in the cluster, and the other tests keep transactions open in their own databases.
public func sealUntil(_ events: Int64, _ client: SessionPool) async throws -> DigestCheckpoint? {
    let digests = LedgerDigests(client: client)
    let deadline = ContinuousClock.now + .seconds(120)
    while true {
        var latest = try await digests.seal()
        if latest == nil { latest = try await digests.latest() }
        if let latest, latest.eventCount >= events { return latest }
        guard ContinuousClock.now < deadline else { return latest }
        try await Task.sleep(for: .milliseconds(20))
    }
}
