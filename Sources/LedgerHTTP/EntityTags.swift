import Crypto
import HTTPTypes
import Hummingbird
import LedgerCore
import NIOCore

/// `ETag` and `If-None-Match` (RFC 9110 §8.8.3, §13.1.2): a client that sends back the tag of the answer it holds is
/// answered `304 Not Modified`, without a body, while that answer stays the same.
enum EntityTags {
    /// What an `If-None-Match` lists: each tag without its weakness (`W/`), as the weak comparison this header uses
    /// does; `*` stands for any current answer.
    static func held(in header: String?) -> [Substring] {
        guard let header else { return [] }
        return header.split(separator: ",").map { part in
            let tag = part.trimmingOptionalWhitespace
            return tag.hasPrefix("W/") ? tag.dropFirst(2) : tag
        }
    }

    /// Whether `header` names `tag` (or is `*`).
    static func matches(_ header: String?, _ tag: String) -> Bool {
        held(in: header).contains { $0 == "*" || $0 == tag }
    }

    /// The tag of a rendered answer: its bytes' SHA-256, the first 16 bytes in hex. Canonical JSON makes the same
    /// answer the same bytes, so the tag changes exactly when the answer does.
    static func tag(of body: ByteBuffer) -> String {
        "\"" + Array(SHA256.hash(data: body.readableBytesView).prefix(16)).hex + "\""
    }

    /// `body` as a JSON answer with its tag, or a 304 when the request holds that tag already.
    static func answer(_ request: Request, body: ByteBuffer) -> Response {
        let tag = tag(of: body)
        if matches(request.headers.value(of: .ifNoneMatch), tag) { return Response(status: .notModified, headers: [.eTag: tag]) }
        return JSONResponse.make(status: .ok, bytes: body, headers: [.eTag: tag])
    }
}
