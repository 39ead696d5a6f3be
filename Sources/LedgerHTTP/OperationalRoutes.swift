import Foundation
import Hummingbird
import LedgerCore
import LedgerPostgres
import PostgresNIO

/// `/healthz`, `/readyz`, `/metrics` and `/openapi.yaml`: no token needed.
struct OperationalRoutes {
    typealias Context = LedgerRequestContext
    let client: PostgresClient
    let metrics: LedgerMetrics

    /// How long readiness waits for the database before saying it is not ready.
    static let readinessTimeout = Duration.seconds(2)

    func register(on router: Router<Context>) {
        router.get("healthz") { _, _ in JSONResponse.make(status: .ok, body: ["status": "ok"]) }
        router.get("readyz", use: ready)
        router.get("metrics") { _, _ in
            Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
                     body: .init(byteBuffer: ByteBuffer(string: metrics.prometheusText())))
        }
        router.get("openapi.yaml") { _, _ in
            Response(status: .ok, headers: [.contentType: "application/yaml"],
                     body: .init(byteBuffer: ByteBuffer(string: OpenAPIDocument.yaml)))
        }
    }

    @Sendable func ready(_ request: Request, context: Context) async throws -> Response {
        let client = self.client
        let reachable = await withTaskGroup(of: Bool.self) { group in
            group.addTask { (try? await client.query("SELECT 1")) != nil }
            group.addTask {
                try? await Task.sleep(for: Self.readinessTimeout)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
        guard reachable else {
            throw APIError(.serviceUnavailable, "unavailable", "the database cannot be reached", headers: [.retryAfter: "1"])
        }
        return JSONResponse.make(status: .ok, body: ["status": "ready"])
    }
}
