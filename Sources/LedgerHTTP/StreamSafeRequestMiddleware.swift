import HTTPTypes
import Hummingbird
import LedgerCore

/// Refuses, before any route compares or hashes them, a request line or header values that are not stream-safe
/// (`StreamSafeText`): the router matches the path, and the routes read `Authorization`, `Content-Type`, `Accept`,
/// `If-None-Match` and the providers' headers, each up to NIO's 80 KiB, where a run of combining marks made one
/// comparison cost seconds. ASCII, which every one of them should be, is checked without decoding. Bodies are held to
/// the same rule as they are parsed (`JSONValue(parsingIncoming:)`).
///
/// Every request pays for it: `/healthz` took 48–49 µs of CPU without it and 50–52 µs with it (release, 16
/// connections). A first version read each header as a `String` through an unspecialised scan, and cost 8 µs.
struct StreamSafeRequestMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if let refusal = Self.refusal(of: request.head) { throw refusal }
        return try await next(request, context)
    }

    /// The 400 for a request line or header value that is not stream-safe; nil when all are.
    static func refusal(of request: HTTPRequest) -> APIError? {
        if let refusal = refusal(ofTarget: request.path ?? "") { return refusal }
        // The bytes as received: `value` would make a String of each.
        if let field = request.headerFields.first(where: { field in
            !field.withUnsafeBytesOfValue { StreamSafeText.isStreamSafe(utf8: $0) }
        }) {
            let name = field.name.rawName
            return APIError.invalidRequest(field: name, "the \(name) header \(StreamSafeText.rule)")
        }
        return nil
    }

    /// The 400 for a request's path and query (its target) that is not stream-safe; nil when it is.
    static func refusal(ofTarget target: String) -> APIError? {
        // As sent and as decoded: the router and the query's parser decode `%CC%81` to a combining mark. A target
        // without `%` (most) is decoded already: no copy on the hot paths.
        let target = target.utf8
        guard StreamSafeText.isStreamSafe(utf8: target),
            !target.contains(UInt8(ascii: "%")) || StreamSafeText.isStreamSafe(utf8: Self.percentDecoded(target))
        else {
            return APIError.invalidRequest(field: "path", "the request's path and query \(StreamSafeText.rule)")
        }
        return nil
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
