import Hummingbird
import LedgerPostgres
import NIOCore

/// Reads a request's body up to a limit. A body past it is a 413 naming the limit; when the client declared its size
/// (`Content-Length`), it is refused before a byte of it is read, and the connection is closed rather than drained
/// (a 100 MB body used to be read for 10 s before the answer). A body that does not arrive in time
/// (`RequestBodyDeadline`) is a 408.
enum RequestBodyReader {
    static func collect(_ request: Request, upTo limit: Int) async throws -> ByteBuffer {
        if let declared = request.headers[.contentLength].flatMap(Int.init), declared > limit {
            throw tooLarge(limit)
        }
        do {
            var request = request
            let body = try await request.collectBody(upTo: limit)
            Deadline.restartForRequest()
            return body
        } catch is NIOTooManyBytesError {
            throw tooLarge(limit)
        } catch let late as RequestBodyTooSlow {
            throw tooSlow(late.timeout)
        }
    }

    static func tooSlow(_ timeout: Duration) -> APIError {
        APIError(.requestTimeout, "request_timeout", "the request body did not arrive within \(timeout.components.seconds) s",
                 headers: [.connection: "close"])
    }

    static func tooLarge(_ limit: Int) -> APIError {
        let size = limit >= 1024 * 1024 ? "\(limit / (1024 * 1024)) MiB" : "\(limit / 1024) KiB"
        return APIError(.contentTooLarge, "payload_too_large", "the request body is larger than \(size)",
                        details: ["limit": .int(Int64(limit))], headers: [.connection: "close"])
    }
}
