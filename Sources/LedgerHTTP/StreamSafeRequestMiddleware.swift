import Hummingbird
import LedgerCore

/// Refuses, before any route compares or hashes them, a request line or header values that are not stream-safe
/// (`StreamSafeText`): the router matches the path, and the routes read `Authorization`, `Content-Type`, `Accept`,
/// `If-None-Match` and the providers' headers, each up to NIO's 80 KiB, where a run of combining marks made one
/// comparison cost seconds. ASCII, which every one of them should be, is checked without decoding. Bodies are held to
/// the same rule as they are parsed (`JSONValue(parsingIncoming:)`).
struct StreamSafeRequestMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        // As sent and as decoded: the router and the query's parser decode `%CC%81` to a combining mark.
        let target = request.uri.string.utf8
        guard StreamSafeText.isStreamSafe(utf8: target), StreamSafeText.isStreamSafe(utf8: Self.percentDecoded(target)) else {
            throw APIError.invalidRequest(field: "path", "the request's path and query \(StreamSafeText.rule)")
        }
        if let field = request.headers.first(where: { !StreamSafeText.isStreamSafe(utf8: $0.value.utf8) }) {
            let name = field.name.rawName
            throw APIError.invalidRequest(field: name, "the \(name) header \(StreamSafeText.rule)")
        }
        return try await next(request, context)
    }

    /// `%XY` as the byte 0xXY, everything else (a malformed escape too) as it is: only for this check, which must
    /// see every combining mark a decoder could make.
    static func percentDecoded(_ bytes: String.UTF8View) -> [UInt8] {
        var decoded: [UInt8] = []
        var rest = bytes[...]
        while let byte = rest.popFirst() {
            if byte == UInt8(ascii: "%"), let high = rest.first?.hexDigitValue,
                let low = rest.dropFirst().first?.hexDigitValue
            {
                decoded.append(high << 4 | low)
                rest = rest.dropFirst(2)
            } else {
                decoded.append(byte)
            }
        }
        return decoded
    }
}
