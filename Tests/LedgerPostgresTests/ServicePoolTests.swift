@testable import LedgerPostgres
import PostgresNIO
import Testing

/// How `serve`'s pool keeps its sessions. PostgresNIO's pool starts two timers each time a connection goes back to
/// it idle — its idle timeout, for connections above the minimum, and its keep-alive ping — each a task group of two
/// tasks and a libdispatch timer. Per request that was a third of `serve`'s CPU for a history read (BENCHMARKS.md).
@Suite("Database: the service's pool")
struct ServicePoolTests {
    @Test func everySessionIsKeptOpenAndNoneIsPingedSoAReleaseStartsNoTimer() throws {
        var configuration = try Database.configuration(fromURL: "postgres://ledger@127.0.0.1:5432/ledger")
        configuration.options.maximumConnections = 8
        let service = Database(configuration: configuration).serviceConfiguration(limits: .service)
        #expect(service.options.maximumConnections == 8)
        #expect(service.options.minimumConnections == 8)
        #expect(service.options.keepAliveBehavior.map { _ in true } == nil)
    }
}
