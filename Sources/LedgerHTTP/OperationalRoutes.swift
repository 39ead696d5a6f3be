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
    /// Reported by `/readyz`, one by one; a replica down or behind does not make the service unready.
    let replicas: ReadReplicas?

    /// How long readiness waits for the database before saying it is not ready (at most the request deadline).
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

    /// Ready when the database answers `SELECT 1` within the readiness timeout (or the request deadline, when that
    /// is shorter). The query runs under `withConnection(within:)`, like every request's database work: the answer
    /// comes at the limit even when the query never returns (PostgresNIO's queries ignore cancellation, so waiting for
    /// a cancelled query, as a task group does for its children, could wait forever).
    @Sendable func ready(_ request: Request, context: Context) async throws -> Response {
        let limit = Deadline.request.map { min($0, Self.readinessTimeout) } ?? Self.readinessTimeout
        let logger = context.logger
        let reachable: Bool
        do {
            try await client.withConnection(within: limit) { connection in
                for try await _ in try await connection.query("SELECT 1", logger: logger) {}
            }
            reachable = true
        } catch {
            reachable = false
        }
        guard reachable else {
            throw APIError(.serviceUnavailable, "unavailable", "the database cannot be reached", headers: [.retryAfter: "1"])
        }
        guard let replicas else { return JSONResponse.make(status: .ok, body: ["status": "ready"]) }
        let maximumLag = replicas.maximumLag
        return JSONResponse.make(status: .ok, body: [
            "status": "ready",
            "replicas": .array(replicas.report.map { name, health in
                switch health {
                case .unknown:
                    ["name": .string(name), "state": "unknown"]
                case .behind(let lag):
                    ["name": .string(name), "state": lag <= maximumLag ? "in_use" : "lagging", "lagSeconds": .string(Self.seconds(lag))]
                case .down(let reason):
                    ["name": .string(name), "state": "down", "reason": .string(reason)]
                }
            }),
        ])
    }

    /// A lag as seconds with millisecond precision ("0.250"): JSON numbers here are integers.
    static func seconds(_ duration: Duration) -> String {
        let milliseconds = duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
        return "\(milliseconds / 1000).\(String(format: "%03d", milliseconds % 1000))"
    }
}
