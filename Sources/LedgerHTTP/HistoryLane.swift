import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import LedgerCore
import LedgerPostgres
import Logging
import NIOCore
import NIOHTTP1
import Synchronization

/// The read auditors, support and the console repeat most — `GET /v1/orders/{orderId}/history` of a page rendered
/// before (`RenderedHistories`), or one the client holds, of an order that has not moved since — answered where the
/// connection's bytes are, in its channel pipeline (`ConnectionFront`), without the async channel, the router and
/// its middleware: on this machine a bare Hummingbird route costs ~85 µs of CPU a request and a bare NIO handler
/// ~35 µs, and such a read was ~190 µs in all (BENCHMARKS.md, stop 52).
///
/// The lane answers only what the route would answer, the same way: the same query rules, token cache and scope, the
/// same version check (`RenderedHistories.answer`, which confirms a cached token, within the request's deadline),
/// the same headers, request id, log line and metrics. Anything else — another route, a page not rendered, a moved
/// order, an unknown or revoked token, a refusal, an error, a doubt — goes on to the router untouched, which answers
/// it as it always did (and again asks the version: a second question only when the first said the page is stale).
/// `serve` has no lane when it reads from replicas: which server answers is the router's to choose (`ReadSource`).
public final class HistoryLane: Sendable {
    let ledger: Ledger
    let tokens: TokenCache
    let histories: RenderedHistories
    /// The `Server` header the application sends (Hummingbird's `serverName`).
    let serverName: String?
    /// How many requests the lane answered (tests see that it did).
    let answered = Atomic<Int>(0)

    init(ledger: Ledger, tokens: TokenCache, histories: RenderedHistories, serverName: String?) {
        self.ledger = ledger
        self.tokens = tokens
        self.histories = histories
        self.serverName = serverName
    }

    /// The route's path, as the router names it in metrics.
    static let route = "/v1/orders/{orderId}/history"

    /// An answer ready to write.
    struct Answer {
        let head: HTTPResponseHead
        let body: ByteBuffer?
    }

    /// The order whose history `head` asks for, when the lane may answer it: a GET of exactly the route's path with a
    /// valid order id written plainly (no percent escape: the router decodes those), and headers the router reads as
    /// they were parsed (`readAsParsed`). Nil for every other request.
    static func orderId(of head: HTTPRequestHead) -> String? {
        guard head.method == .GET else { return nil }
        // Compared in place: splitting the path into arrays of segments cost 1 % of a read. A target of the route's
        // path is the router's `path` as it is (origin form: no scheme to parse).
        let path = head.uri.utf8.prefix { $0 != UInt8(ascii: "?") }
        let (before, after) = ("/v1/orders/".utf8, "/history".utf8)
        guard path.count > before.count + after.count, path.starts(with: before),
            path.suffix(after.count).elementsEqual(after)
        else { return nil }
        let id = path.dropFirst(before.count).dropLast(after.count)
        guard !id.contains(UInt8(ascii: "/")), !id.contains(UInt8(ascii: "%")) else { return nil }
        let orderId = String(Substring(id))
        return Identifier.isValidOrderId(orderId) && readAsParsed(head.headers) ? orderId : nil
    }

    /// Whether the router, which reads these headers in HTTP types, reads each exactly as the parser gave it: a name
    /// of token characters (RFC 9110 §5.1) and a value of visible ASCII with spaces or tabs only inside it. Such a
    /// field goes into `HTTPFields` unchanged (no value to legalise, no name to drop), and is stream-safe (ASCII), so
    /// the router's stream-safety check would pass it. The lane reads the parser's headers without converting them
    /// (the conversion was 3 % of a read's CPU); a request with any other header is the router's.
    static func readAsParsed(_ headers: HTTPHeaders) -> Bool {
        headers.allSatisfy { name, value in
            !name.isEmpty && name.utf8.allSatisfy(isTokenCharacter)
                && value.utf8.first != UInt8(ascii: " ") && value.utf8.first != UInt8(ascii: "\t")
                && value.utf8.last != UInt8(ascii: " ") && value.utf8.last != UInt8(ascii: "\t")
                && value.utf8.allSatisfy { (0x20...0x7E).contains($0) || $0 == UInt8(ascii: "\t") }
        }
    }

    private static func isTokenCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default:
            "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    /// The answer to a request for `orderId`'s history, when the route's answer would be a page rendered before or a
    /// 304; nil when the router must answer it.
    func answer(_ head: HTTPRequestHead, orderId: String, logger: Logger) async -> Answer? {
        let started = ContinuousClock.now
        // The route's rules on the head as parsed (`orderId(of:)` took only a GET whose headers read the same): a
        // Hummingbird `Request` would parse the target into a `URI` (the query only matters when there is one).
        let target = head.uri
        let query = target.utf8.firstIndex(of: UInt8(ascii: "?"))
        let metrics = RouteMetrics.shared
        let active = metrics.active(.get)
        active.increment()
        defer { active.decrement() }
        // The middleware's order: the deadline around all the database work, the stream-safety check, the token.
        let found: (RenderedHistories.Answer, AuthenticatedToken)? = try? await Deadline.forRequest {
            guard StreamSafeRequestMiddleware<LedgerRequestContext>.refusal(ofTarget: target) == nil,
                let key = try? OrderRoutes.historyPage(orderId: orderId, query == nil ? .none : QueryParameters(URI(target))),
                let secret = try? RequireScope.bearerSecret(authorization: head.headers.value(of: .authorization)),
                secret.utf8.count <= RequireScope.longestSecret,
                let authenticated = try await tokens.authenticate(secret: secret),
                authenticated.token.scopes.contains(.eventsRead)
            else { return nil }
            let answer = try await TokenConfirmation.$current.withValue(authenticated.confirmation) {
                try await histories.answer(to: key, holding: head.headers.value(of: .ifNoneMatch), on: ledger)
            }
            guard let answer else { return nil }
            try await authenticated.confirmation?.confirmIfPending()
            return (answer, authenticated.token)
        }
        guard case let (answer, token)? = found else { return nil }

        let requestId = RequestLogMiddleware.requestId(given: head.headers.value(of: .requestId))
        // NIO's head, built as the codec would build it from the route's `HTTPFields` (the conversion each way was
        // 3 % of a read's CPU): the same fields, in the same order.
        var headers = HTTPHeaders()
        let (status, body): (HTTPResponse.Status, ByteBuffer?)
        switch answer {
        case .notModified(let etag):
            (status, body) = (.notModified, nil)
            headers.add(name: HTTPField.Name.eTag.rawName, value: etag)
        case .page(let bytes, let etag):
            (status, body) = (.ok, bytes)
            headers.add(name: HTTPField.Name.eTag.rawName, value: etag)
            headers.add(name: HTTPField.Name.contentType.rawName, value: "application/json")
        }
        // What the route's response, the middleware and Hummingbird add, in that order.
        headers.add(name: HTTPField.Name.contentLength.rawName, value: String(body?.readableBytes ?? 0))
        headers.add(name: HTTPField.Name.requestId.rawName, value: requestId)
        headers.add(name: HTTPField.Name.date.rawName, value: HTTPDate.now)
        if let serverName { headers.add(name: HTTPField.Name.server.rawName, value: serverName) }
        metrics.answered(Self.route, .get, status, since: started)
        RequestLogMiddleware.log(
            .get, String(target[..<(query ?? target.endIndex)]), status, since: started, requestId: requestId,
            actor: token.name, to: logger)
        answered.add(1, ordering: .relaxed)
        let responseStatus = HTTPResponseStatus(statusCode: status.code, reasonPhrase: status.reasonPhrase)
        return Answer(head: HTTPResponseHead(version: .http1_1, status: responseStatus, headers: headers), body: body)
    }
}

/// The `Date` header's value (RFC 9110 §5.6.7), made once a second.
enum HTTPDate {
    private static let cached = Mutex<(second: Int, text: String)>((-1, ""))
    private static let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    static var now: String {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        let second = Int(time.tv_sec)
        return cached.withLock { cached in
            if cached.second != second { cached = (second, format(second)) }
            return cached.text
        }
    }

    static func format(_ second: Int) -> String {
        var seconds = time_t(second)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }
}
