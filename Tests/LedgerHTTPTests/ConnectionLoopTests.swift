import Hummingbird
import HummingbirdTesting
import LedgerHTTP
import LedgerPostgres
import Testing

/// A connection's requests are served on its event loop (`ConnectionsOnTheirLoops`), not on Swift's own threads,
/// which would put a thread switch between every request and its socket and database session.
@Suite("HTTP: a connection's requests on its event loop")
struct ConnectionLoopTests {
    @Test func aRequestIsServedOnAnEventLoopAcrossItsAwaits() async throws {
        let router = Router(context: LedgerRequestContext.self)
        router.get("where") { _, _ -> String in
            let before = EventLoopExecutor.current != nil
            await Task.yield()
            return before && EventLoopExecutor.current != nil ? "loop" : "elsewhere"
        }
        let app = Application(router: router, server: LedgerApplication.server())
        try await app.test(.live) { client in
            for _ in 0..<3 {
                let answer = try await client.execute(uri: "/where", method: .get)
                #expect(answer.status == .ok)
                #expect(String(buffer: answer.body) == "loop")
            }
        }
    }
}
