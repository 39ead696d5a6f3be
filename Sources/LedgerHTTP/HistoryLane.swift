import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import LedgerCore
import LedgerPostgres
import Logging
import NIOCore
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
        let head: HTTPResponse
        let body: ByteBuffer?
    }

    /// The order whose history `head` asks for, when the lane may answer it: a GET of exactly the route's path with a
    /// valid order id written plainly (no percent escape: the router decodes those). Nil for every other request.
    static func orderId(of head: HTTPRequest) -> String? {
        guard head.method == .get, let target = head.path else { return nil }
        // Compared in place: splitting the path into arrays of segments cost 1 % of a read.
        let path = target.utf8.prefix { $0 != UInt8(ascii: "?") }
        let (before, after) = ("/v1/orders/".utf8, "/history".utf8)
        guard path.count > before.count + after.count, path.starts(with: before),
            path.suffix(after.count).elementsEqual(after)
        else { return nil }
        let id = path.dropFirst(before.count).dropLast(after.count)
        guard !id.contains(UInt8(ascii: "/")), !id.contains(UInt8(ascii: "%")) else { return nil }
        let orderId = String(Substring(id))
        return Identifier.isValidOrderId(orderId) ? orderId : nil
    }

    /// The answer to a request for `orderId`'s history, when the route's answer would be a page rendered before or a
    /// 304; nil when the router must answer it.
    func answer(_ head: HTTPRequest, orderId: String, logger: Logger) async -> Answer? {
        let started = ContinuousClock.now
        // The route's rules on the head itself: a Hummingbird `Request` parses the target into a `URI` (the query
        // only matters when there is one).
        let target = head.path ?? ""
        let query = target.utf8.firstIndex(of: UInt8(ascii: "?"))
        let metrics = RouteMetrics.shared
        let active = metrics.active(head.method)
        active.increment()
        defer { active.decrement() }
        // The middleware's order: the deadline around all the database work, the stream-safety check, the token.
        let found: (RenderedHistories.Answer, AuthenticatedToken)? = try? await Deadline.forRequest {
            guard StreamSafeRequestMiddleware<LedgerRequestContext>.refusal(of: head) == nil,
                let key = try? OrderRoutes.historyPage(orderId: orderId, query == nil ? .none : QueryParameters(URI(target))),
                let secret = try? RequireScope.bearerSecret(of: head.headerFields), secret.utf8.count <= RequireScope.longestSecret,
                let authenticated = try await tokens.authenticate(secret: secret),
                authenticated.token.scopes.contains(.eventsRead)
            else { return nil }
            let answer = try await TokenConfirmation.$current.withValue(authenticated.confirmation) {
                try await histories.answer(to: key, holding: head.headerFields.value(of: .ifNoneMatch), on: ledger)
            }
            guard let answer else { return nil }
            try await authenticated.confirmation?.confirmIfPending()
            return (answer, authenticated.token)
        }
        guard case let (answer, token)? = found else { return nil }

        let requestId = RequestLogMiddleware.requestId(head.headerFields)
        var fields: HTTPFields = [:]
        let (status, body): (HTTPResponse.Status, ByteBuffer?)
        switch answer {
        case .notModified(let etag):
            (status, body) = (.notModified, nil)
            fields[.eTag] = etag
        case .page(let bytes, let etag):
            (status, body) = (.ok, bytes)
            fields[.eTag] = etag
            fields[.contentType] = "application/json"
        }
        // What the route's response, the middleware and Hummingbird add, in that order.
        fields[.contentLength] = String(body?.readableBytes ?? 0)
        fields[.requestId] = requestId
        fields[.date] = HTTPDate.now
        if let serverName { fields[.server] = serverName }
        metrics.answered(Self.route, head.method, status, since: started)
        RequestLogMiddleware.log(
            head.method, String(target[..<(query ?? target.endIndex)]), status, since: started, requestId: requestId,
            actor: token.name, to: logger)
        answered.add(1, ordering: .relaxed)
        return Answer(head: HTTPResponse(status: status, headerFields: fields), body: body)
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
