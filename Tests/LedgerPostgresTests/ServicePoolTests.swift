@testable import LedgerPostgres
import PostgresNIO
import Testing

/// How `serve`'s pool keeps its sessions. PostgresNIO's pool starts two timers each time a connection goes back to
/// it idle — its idle timeout, for connections above the minimum, and its keep-alive ping — each a task group of two
/// tasks and a libdispatch timer. Per request that was a third of `serve`'s CPU for a history read (BENCHMARKS.md).
@Suite("Database: the service's pool")
struct ServicePoolTests {
    @Test func everySessionIsKeptOpenAndThePoolPingsNoneSoAReleaseStartsNoTimer() throws {
        var configuration = try Database.configuration(fromURL: "postgres://ledger@127.0.0.1:5432/ledger")
        configuration.options.maximumConnections = 8
        let service = Database(configuration: configuration).serviceConfiguration(limits: .service)
        #expect(service.options.maximumConnections == 8)
        #expect(service.options.minimumConnections == 8)
        #expect(service.options.keepAliveBehavior.map { _ in true } == nil)
        // PostgreSQL keeps an idle session's path open instead, with TCP keep-alives (the test cluster listens on a Unix
        // socket only, where they do not apply: `scripts/bench/run` and a URL-configured serve use TCP).
        let asked = Dictionary(service.options.additionalStartupParameters, uniquingKeysWith: { $1 })
        #expect(asked["tcp_keepalives_idle"] == "30" && asked["tcp_keepalives_interval"] == "10" && asked["tcp_keepalives_count"] == "3")
    }
}
