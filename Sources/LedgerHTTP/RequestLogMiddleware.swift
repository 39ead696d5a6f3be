import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Synchronization

/// Accepts `X-Request-Id` (or makes one), echoes it, and logs one line per request:
/// method, path, status, milliseconds, request id and actor. Never the Authorization header.
struct RequestLogMiddleware: RouterMiddleware {
    typealias Context = LedgerRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        context.requestId = Self.requestId(request.headers)
        let started = ContinuousClock.now
        var response = try await next(request, context)
        response.headers[.requestId] = context.requestId
        Self.log(
            request.method, request.uri.path, response.status, since: started, requestId: context.requestId,
            actor: context.token?.name, to: context.logger)
        return response
    }
}

extension RequestLogMiddleware {
    /// The request's own `X-Request-Id` (1–128 bytes), else a new one.
    static func requestId(_ headers: HTTPFields) -> String {
        requestId(given: headers.value(of: .requestId))
    }

    /// The request id `given` in `X-Request-Id` when it is 1–128 bytes, else a new one.
    static func requestId(given: String?) -> String {
        given.flatMap { $0.utf8.count <= 128 && !$0.isEmpty ? $0 : nil } ?? newRequestId()
    }

    /// The request's line: method, path, status, milliseconds since `started`, request id and actor.
    static func log(
        _ method: HTTPRequest.Method, _ path: @autoclosure () -> String, _ status: HTTPResponse.Status,
        since started: ContinuousClock.Instant, requestId: String, actor: String?, to logger: Logger
    ) {
        logger.info(
            "\(method) \(path()) \(status.code) \(String(format: "%.1f", milliseconds(since: started)))ms",
            metadata: ["request_id": "\(requestId)", "actor": "\(actor ?? "-")"])
    }

    private static func milliseconds(since started: ContinuousClock.Instant) -> Double {
        let elapsed = started.duration(to: .now)
        return Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
    }

    /// A random (version 4) UUID, lowercased. Foundation's `UUID()` opens and reads /dev/urandom on every call on
    /// Linux (6 % of serve's CPU per `/healthz`), and the standard library's generator makes a `getrandom` call for each
    /// 64 bits (1.5 % of a history read's CPU): a request id names a request in the logs, it guards nothing, so the bits
    /// come from a generator seeded once from the system's (`RequestIdBits`).
    static func newRequestId() -> String {
        var uuid = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)).uuid
        let (high, low) = RequestIdBits.next()
        withUnsafeMutableBytes(of: &uuid) { bytes in
            bytes.storeBytes(of: high, toByteOffset: 0, as: UInt64.self)
            bytes.storeBytes(of: low, toByteOffset: 8, as: UInt64.self)
            bytes[6] = bytes[6] & 0x0F | 0x40  // version 4
            bytes[8] = bytes[8] & 0x3F | 0x80  // the RFC 4122 variant
        }
        return UUID(uuid: uuid).lowercasedText
    }
}

/// SplitMix64 over a process-wide state seeded from the system's generator: distinct ids without a system call each.
enum RequestIdBits {
    private static let state = Mutex<UInt64>({
        var system = SystemRandomNumberGenerator()
        return system.next()
    }())

    static func next() -> (UInt64, UInt64) {
        state.withLock { state in (mix(&state), mix(&state)) }
    }

    private static func mix(_ state: inout UInt64) -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

extension HTTPField.Name {
    static let requestId = Self("X-Request-Id")!
    static let idempotentReplay = Self("Idempotent-Replay")!
}
