import Metrics
import Prometheus
import Synchronization

/// The ledger's metrics in Prometheus form: Hummingbird's request metrics (by route and status, with latency
/// histograms) plus appended events and refusals by code. swift-metrics has one global backend per process,
/// so it is bootstrapped once and shared by every application the process builds (tests build many).
public struct LedgerMetrics: Sendable {
    let registry: PrometheusCollectorRegistry

    public static let shared: LedgerMetrics = {
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        return LedgerMetrics(registry: registry)
    }()

    func appended(_ count: Int) {
        Counter(label: "ledger_events_appended_total").increment(by: count)
    }

    func refused(_ code: String) {
        Counter(label: "ledger_refusals_total", dimensions: [("code", code)]).increment()
    }

    func prometheusText() -> String {
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        return String(decoding: buffer, as: UTF8.self)
    }
}
