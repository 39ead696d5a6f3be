import Foundation
import Hummingbird
import LedgerCore
import LedgerPostgres

/// `/healthz`, `/readyz`, `/metrics` and `/openapi.yaml`: no token needed.
struct OperationalRoutes {
    typealias Context = LedgerRequestContext
    let operations: Operations
    let metrics: LedgerMetrics
    /// Reported by `/readyz`, one by one; a replica down or behind does not make the service unready.
    let replicas: ReadReplicas?

    /// How long readiness waits for the database before saying it is not ready (at most the request deadline).
    let readinessTimeout: Duration

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

    /// Ready when the database answers within the readiness timeout (or the request deadline, when that is shorter;
    /// `Operations.readiness`) and takes writes: a standby, or a primary not yet taking writes mid-failover, is not
    /// ready. `replication` says whether a commit waits for a standby (`synchronous`) or is on one machine only
    /// (`single_copy`: the formation's standby is gone); ready either way.
    @Sendable func ready(_ request: Request, context: Context) async throws -> Response {
        let limit = Deadline.request.map { min($0, readinessTimeout) } ?? readinessTimeout
        guard let database = await operations.readiness(within: limit, logger: context.logger) else {
            throw APIError(.serviceUnavailable, "unavailable", "the database cannot be reached", headers: [.retryAfter: "1"])
        }
        guard database.takesWrites else {
            throw APIError(
                .serviceUnavailable, "unavailable", "the database does not take writes now (a standby, or a failover under way)",
                headers: [.retryAfter: "1"])
        }
        let replication = JSONValue.string(database.synchronousReplication ? "synchronous" : "single_copy")
        guard let replicas else { return JSONResponse.make(status: .ok, body: ["status": "ready", "replication": replication]) }
        let maximumLag = replicas.maximumLag
        return JSONResponse.make(status: .ok, body: [
            "status": "ready",
            "replication": replication,
            "replicas": .array(replicas.report.map { name, health in
                let state = JSONValue.string(health.state(maximumLag: maximumLag))
                return switch health {
                case .unknown: ["name": .string(name), "state": state]
                case .behind(let lag): ["name": .string(name), "state": state, "lagSeconds": .string(Self.seconds(lag))]
                case .down(let reason): ["name": .string(name), "state": state, "reason": .string(reason)]
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
