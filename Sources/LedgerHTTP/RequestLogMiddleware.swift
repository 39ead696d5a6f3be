import Foundation
import HTTPTypes
import Hummingbird
import Logging

/// Accepts `X-Request-Id` (or makes one), echoes it, and logs one line per request:
/// method, path, status, milliseconds, request id and actor. Never the Authorization header.
struct RequestLogMiddleware: RouterMiddleware {
    typealias Context = LedgerRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        let given = request.headers[.requestId].flatMap { $0.utf8.count <= 128 && !$0.isEmpty ? $0 : nil }
        context.requestId = given ?? UUID().uuidString.lowercased()
        let started = ContinuousClock.now
        var response = try await next(request, context)
        response.headers[.requestId] = context.requestId
        let elapsed = started.duration(to: .now)
        let milliseconds = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
        context.logger.info(
            "\(request.method) \(request.uri.path) \(response.status.code) \(String(format: "%.1f", milliseconds))ms",
            metadata: ["request_id": "\(context.requestId)", "actor": "\(context.token?.name ?? "-")"])
        return response
    }
}

extension HTTPField.Name {
    static let requestId = Self("X-Request-Id")!
    static let idempotentReplay = Self("Idempotent-Replay")!
}
