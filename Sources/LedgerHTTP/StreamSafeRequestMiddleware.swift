import Hummingbird
import LedgerCore

/// Refuses, before any route compares or hashes them, a request line or header values that are not stream-safe
/// (`StreamSafeText`): the router matches the path, and the routes read `Authorization`, `Content-Type`, `Accept`,
/// `If-None-Match` and the providers' headers, each up to NIO's 80 KiB, where a run of combining marks made one
/// comparison cost seconds. ASCII, which every one of them should be, is checked without decoding. Bodies are held to
/// the same rule as they are parsed (`JSONValue(parsingIncoming:)`).
struct StreamSafeRequestMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard StreamSafeText.isStreamSafe(utf8: request.uri.string.utf8) else {
            throw APIError.invalidRequest(field: "path", "the request's path and query \(StreamSafeText.rule)")
        }
        if let field = request.headers.first(where: { !StreamSafeText.isStreamSafe(utf8: $0.value.utf8) }) {
            let name = field.name.rawName
            throw APIError.invalidRequest(field: name, "the \(name) header \(StreamSafeText.rule)")
        }
        return try await next(request, context)
    }
}
