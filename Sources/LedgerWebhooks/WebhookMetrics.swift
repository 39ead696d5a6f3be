import Foundation
import LedgerPostgres
import Metrics

/// The webhooks' Prometheus series (served at `/metrics` by the process's metrics backend):
/// - `ledger_webhook_attempts_total{endpoint, outcome}`: attempts by what came of them;
/// - `ledger_webhook_attempt_seconds{endpoint}`: how long the receiver took;
/// - `ledger_webhook_pending{endpoint}` and `ledger_webhook_lag_seconds{endpoint}`: deliveries not yet acknowledged,
///   and how long the oldest has waited (`observe`, each few seconds).
enum WebhookMetrics {
    static func attempted(_ attempt: WebhookAttempt, endpoint: String) {
        Counter(label: "ledger_webhook_attempts_total", dimensions: [("endpoint", endpoint), ("outcome", attempt.outcome.rawValue)])
            .increment()
        Timer(label: "ledger_webhook_attempt_seconds", dimensions: [("endpoint", endpoint)])
            .recordMilliseconds(attempt.latencyMilliseconds)
    }

    static func observe(_ endpoints: [WebhookEndpoint], now: Date) {
        for endpoint in endpoints {
            Gauge(label: "ledger_webhook_pending", dimensions: [("endpoint", endpoint.name)]).record(endpoint.pending)
            Gauge(label: "ledger_webhook_lag_seconds", dimensions: [("endpoint", endpoint.name)])
                .record(endpoint.oldestPendingSince.map { max(0, now.timeIntervalSince($0)) } ?? 0)
        }
    }
}
