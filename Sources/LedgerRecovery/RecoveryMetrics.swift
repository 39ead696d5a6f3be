import LedgerCore
import Metrics
import LedgerPostgres

/// The recovery's Prometheus series (served at `/metrics` by the process's metrics backend):
/// - `ledger_recovery_attempts_total{provider, outcome}`: questions asked, by what came of them;
/// - `ledger_recovery_recovered_total{provider}`: orders whose provider's signed answer was recorded;
/// - `ledger_recovery_provider_seconds{provider}`: how long the provider took to answer (or not).
enum RecoveryMetrics {
    static func attempted(_ attempt: RecoveryAttempt, took duration: Duration) {
        Counter(label: "ledger_recovery_attempts_total", dimensions: [("provider", attempt.provider), ("outcome", attempt.outcome.rawValue)])
            .increment()
        if attempt.outcome == .recovered, !attempt.recorded.isEmpty {
            Counter(label: "ledger_recovery_recovered_total", dimensions: [("provider", attempt.provider)]).increment()
        }
        let (seconds, attoseconds) = duration.components
        Timer(label: "ledger_recovery_provider_seconds", dimensions: [("provider", attempt.provider)])
            .recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
