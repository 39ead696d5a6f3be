import Foundation
import Logging
import PostgresNIO

/// A signed App Store message the ledger keeps verbatim: a notification (`provider.notified` evidence, or a message
/// no order matched), a StoreKit 2 signed transaction (`receipt.received`), or Apple's answer when the ledger asked
/// (`provider.notified` whose evidence is `signedTransactionInfo`: a signed transaction).
public struct StoredAppStoreJWS: Sendable, Hashable {
    public enum Kind: String, Sendable { case notification, transaction }
    /// Where it is kept: `order ORDER version N`, or `unmatched NOTIFICATION_UUID`.
    public var location: String
    public var kind: Kind
    public var jws: String
}

/// Reads every stored App Store JWS for `ledger verify --signatures`, one at a time (memory holds one).
struct StoredSignatures: Sendable {
    let client: PostgresClient
    let logger: Logger

    init(client: PostgresClient, logger: Logger = Logger(label: "ledger.audit")) {
        self.client = client
        self.logger = logger
    }

    func forEachAppStoreJWS(_ body: (StoredAppStoreJWS) async throws -> Void) async throws {
        let rows = try await client.query(
            """
            SELECT 'order ' || order_id || ' version ' || version,
                   CASE WHEN data->'evidence' ? 'signedTransactionInfo' THEN 'transaction' ELSE 'notification' END,
                   COALESCE(data->'evidence'->>'signedPayload', data->'evidence'->>'signedTransactionInfo'), position
            FROM events WHERE type = 'provider.notified' AND data->>'provider' = 'app_store'
            UNION ALL
            SELECT 'order ' || order_id || ' version ' || version, 'transaction', data->>'signedTransaction', position
            FROM events WHERE type = 'receipt.received' AND data ? 'signedTransaction'
            UNION ALL
            SELECT 'unmatched ' || notification_id,
                   CASE WHEN unmatched_data->'evidence' ? 'signedTransactionInfo' THEN 'transaction' ELSE 'notification' END,
                   COALESCE(unmatched_data->'evidence'->>'signedPayload', unmatched_data->'evidence'->>'signedTransactionInfo'), NULL
            FROM provider_messages WHERE order_id IS NULL AND provider = 'app_store'
            ORDER BY 4 NULLS LAST, 1
            """, logger: logger)
        for try await (location, kind, jws, _) in rows.decode((String, String, String?, Int64?).self) {
            try await body(StoredAppStoreJWS(location: location, kind: kind == "transaction" ? .transaction : .notification, jws: jws ?? ""))
        }
    }
}
