import Foundation
import LedgerCore
import Logging
import PostgresNIO

/// A signed App Store message the ledger keeps verbatim: a notification (`provider.notified` evidence, or a message
/// kept alone), a StoreKit 2 signed transaction (`receipt.received`), or Apple's answer when the ledger asked
/// (`provider.notified` whose evidence is `signedTransactionInfo`: a signed transaction).
public struct StoredAppStoreJWS: Sendable, Hashable {
    public enum Kind: String, Sendable { case notification, transaction }
    /// Where it is kept: `order ORDER version N`, `unmatched NOTIFICATION_UUID` or `refused NOTIFICATION_UUID` (kept
    /// alone: no order matched, or the event rules refused its values).
    public var location: String
    public var kind: Kind
    public var jws: String
}

/// A signed Alipay or WeChat Pay message the ledger keeps verbatim, as its `evidence` holds it (the body, and for
/// WeChat Pay the `Wechatpay-*` headers): a notification (`provider.notified`, or a message no order matched or the
/// event rules refused) or the provider's answer when the ledger asked (`"source": "query"`).
public struct StoredProviderMessage: Sendable, Hashable {
    /// Where it is kept: `order ORDER version N`, `unmatched NOTIFICATION_ID` or `refused NOTIFICATION_ID`.
    public var location: String
    public var provider: Provider
    public var evidence: JSONValue
}

/// Reads every stored signed message for `ledger verify --signatures`, one at a time (memory holds one).
struct StoredSignatures: Sendable {
    let client: SessionPool
    let logger: Logger

    init(client: SessionPool, logger: Logger = Logger(label: "ledger.audit")) {
        self.client = client
        self.logger = logger
    }

    func forEachAppStoreJWS(_ body: (StoredAppStoreJWS) async throws -> Void) async throws {
        let rows = try await client.query(
            """
            SELECT 'order ' || stream_id || ' version ' || version,
                   CASE WHEN data->'evidence' ? 'signedTransactionInfo' THEN 'transaction' ELSE 'notification' END,
                   COALESCE(data->'evidence'->>'signedPayload', data->'evidence'->>'signedTransactionInfo'), position
            FROM events
            WHERE kind = 'order' AND type = 'provider.notified' AND data->>'provider' = \(Provider.appStore.rawValue)
            UNION ALL
            SELECT 'order ' || stream_id || ' version ' || version, 'transaction', data->>'signedTransaction', position
            FROM events WHERE kind = 'order' AND type = 'receipt.received' AND data ? 'signedTransaction'
            UNION ALL
            SELECT CASE WHEN refused IS NULL THEN 'unmatched ' ELSE 'refused ' END || notification_id,
                   CASE WHEN unmatched_data->'evidence' ? 'signedTransactionInfo' THEN 'transaction' ELSE 'notification' END,
                   COALESCE(unmatched_data->'evidence'->>'signedPayload', unmatched_data->'evidence'->>'signedTransactionInfo'), NULL
            FROM provider_messages WHERE order_id IS NULL AND provider = \(Provider.appStore.rawValue)
            ORDER BY 4 NULLS LAST, 1
            """, .reads, logger: logger)
        for try await (location, kind, jws, _) in rows.decode((String, String, String?, Int64?).self) {
            try await body(StoredAppStoreJWS(location: location, kind: kind == "transaction" ? .transaction : .notification, jws: jws ?? ""))
        }
    }

    /// The providers whose kept messages carry signed HTTP answers (`forEachProviderMessage`), by their stored names.
    static let notifying = [Provider.alipay.rawValue, Provider.wechatPay.rawValue]

    /// Every Alipay and WeChat Pay message kept: on orders (`provider.notified`), then those kept in
    /// `provider_messages` alone (unmatched, or refused by the event rules), in the order they were recorded, then the
    /// answers recovery kept whose signature was checked on arrival (a "not yet", a signed refusal: why the ledger
    /// waited).
    func forEachProviderMessage(_ body: (StoredProviderMessage) async throws -> Void) async throws {
        let rows = try await client.query(
            """
            SELECT 'order ' || stream_id || ' version ' || version, data->>'provider', (data->'evidence')::text, position
            FROM events WHERE kind = 'order' AND type = 'provider.notified' AND data->>'provider' = ANY(\(Self.notifying))
            UNION ALL
            SELECT CASE WHEN refused IS NULL THEN 'unmatched ' ELSE 'refused ' END || notification_id, provider,
                   (unmatched_data->'evidence')::text, NULL
            FROM provider_messages WHERE order_id IS NULL AND provider = ANY(\(Self.notifying))
            UNION ALL
            SELECT 'recovery attempt ' || id || ' (order ' || order_id || ')', provider, answer::text, NULL
            FROM recovery_attempts
            WHERE provider = ANY(\(Self.notifying)) AND answer->>'verified' = 'true'
            ORDER BY 4 NULLS LAST, 1
            """, .reads, logger: logger)
        for try await (location, provider, evidence, _) in rows.decode((String, String, String?, Int64?).self) {
            // Evidence that is missing or unreadable is handed on as null: its check fails, naming what is missing.
            try await body(StoredProviderMessage(
                location: location, provider: Provider(rawValue: provider) ?? .other,
                evidence: evidence.flatMap { try? JSONValue(parsing: Array($0.utf8)) } ?? .null))
        }
    }
}
