import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LedgerCore
@testable import LedgerHTTP
@testable import LedgerPostgres
import LedgerTestSupport
import Logging
import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing

/// `GET /v1/orders/{orderId}/history` of a page rendered before is answered in the connection's pipeline
/// (`HistoryLane`), the same answer the router gives, in the order the requests came.
@Suite("HTTP: the history lane")
struct HistoryLaneTests {
    /// Status, body and headers as the router's (all but the request id and the date, which are each answer's own);
    /// the request's own X-Request-Id echoed; counted in the route's metrics.
    @Test func theLaneAnswersWhatTheRouterWouldAndCountsIt() async throws {
        try await API.run(overTCP: true) { api in
            let lane = try #require(api.lane)
            var order = Lifecycle()
            for event in [order.created, order.queued] { #expect(try await api.post("order-1", event).status == .created) }
            order.transactionId = "2000000000000001"
            let uri = "/v1/orders/order-1/history?limit=50"
            let routed = try await api.get(uri, token: "reader")
            #expect(lane.answered.load(ordering: .relaxed) == 0, "a page not rendered yet is the router's")
            let before = try await Self.counted(api, status: 200)

            let laned = try await api.request(.get, uri, token: "reader", headers: [.requestId: "trace-1"])
            #expect(lane.answered.load(ordering: .relaxed) == 1)
            #expect(laned.status == .ok && laned.bodyText == routed.bodyText)
            #expect(Self.comparable(laned.headers) == Self.comparable(routed.headers), "\(laned.headers) against \(routed.headers)")
            #expect(laned.headers[.requestId] == "trace-1" && laned.headers[.date] != nil)
            #expect(try await Self.counted(api, status: 200) >= before + 1, "counted under the route")

            let etag = try #require(laned.headers[.eTag])
            let held = try await api.request(.get, uri, token: "reader", headers: [.ifNoneMatch: etag])
            #expect(lane.answered.load(ordering: .relaxed) == 2)
            // The router's 304: the same request with the lane stepped aside (a HEAD is always the router's).
            let routedHeld = try await api.request(.head, uri, token: "reader", headers: [.ifNoneMatch: etag])
            #expect(held.status == .notModified && held.bodyText.isEmpty && routedHeld.status == .notModified)
            #expect(Self.comparable(held.headers) == Self.comparable(routedHeld.headers), "\(held.headers) against \(routedHeld.headers)")

            // What the router refuses, the lane leaves to it: a token without the scope, a parameter not allowed.
            #expect(try await api.get(uri, token: "writer").status == .forbidden)
            #expect(try await api.get(uri + "&sort=desc", token: "reader").status == .badRequest)
            #expect(try await api.get(uri, token: "nobody").status == .unauthorized)
            #expect(lane.answered.load(ordering: .relaxed) == 2)
        }
    }

    /// Requests sent together on one connection are answered in the order they came, whichever of the lane and the
    /// router answers each; the lane holds what comes while it answers.
    @Test func pipelinedRequestsAreAnsweredInTheirOrder() async throws {
        try await API.run(overTCP: true) { api in
            let lane = try #require(api.lane)
            #expect(try await api.post("order-1", Lifecycle().created).status == .created)
            let rendered = try await api.get("/v1/orders/order-1/history", token: "reader")
            let etag = try #require(rendered.headers[.eTag])
            let port = try #require(api.client.port)
            let bearer = "Authorization: Bearer \(try #require(api.secrets["reader"]))\r\n"
            func history(_ id: String, close: Bool = false) -> String {
                "GET /v1/orders/order-1/history HTTP/1.1\r\nHost: x\r\n\(bearer)X-Request-Id: \(id)\r\n"
                    + (close ? "Connection: close\r\n" : "") + "\r\n"
            }
            let together = history("r1") + "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Request-Id: r2\r\n\r\n" + history("r3")
                + "GET /nowhere HTTP/1.1\r\nHost: x\r\nX-Request-Id: r4\r\n\r\n" + history("r5", close: true)
            let answer = try await blocking { try RawHTTP.exchange(port: port, Array(together.utf8)) }
            let ids = answer.text.components(separatedBy: "\r\n").compactMap { line in
                line.lowercased().hasPrefix("x-request-id:") ? line.dropFirst("x-request-id:".count).trimmingCharacters(in: .whitespaces) : nil
            }
            #expect(ids == ["r1", "r2", "r3", "r4", "r5"], "\(answer.text)")
            #expect(answer.text.components(separatedBy: "ETag: \(etag)").count - 1 >= 2, "\(answer.text)")
            #expect(answer.text.contains("HTTP/1.1 404 Not Found"))
            #expect(lane.answered.load(ordering: .relaxed) >= 1)
        }
    }

    /// Bytes the parser cannot read, sent right behind a read the lane answers, are answered after it: the lane's 200
    /// first, then the API's JSON 400 for them (`UnreadableRequestResponder`), which ends the connection.
    @Test func anUnreadableRequestBehindALaneReadIsAnsweredAfterIt() async throws {
        try await API.run(overTCP: true) { api in
            let lane = try #require(api.lane)
            #expect(try await api.post("order-1", Lifecycle().created).status == .created)
            #expect(try await api.get("/v1/orders/order-1/history", token: "reader").status == .ok)
            let port = try #require(api.client.port)
            let read = "GET /v1/orders/order-1/history HTTP/1.1\r\nHost: x\r\n"
                + "Authorization: Bearer \(try #require(api.secrets["reader"]))\r\n\r\n"
            let unreadable = "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Bad: a\u{01}b\r\n\r\n"
            let answer = try await blocking { try RawHTTP.exchange(port: port, Array((read + unreadable).utf8)) }
            // Each answer's status line (a body ends with no line break: the next answer follows on its line).
            let statuses = answer.text.components(separatedBy: "HTTP/1.1 ").dropFirst().map { $0.prefix(4) }
                .filter { $0.last == " " && $0.dropLast().allSatisfy(\.isNumber) }.map { $0.dropLast() }
            #expect(statuses == ["200", "400"], "\(answer.text)")
            #expect(answer.text.contains("invalid_request"), "\(answer.text)")
            #expect(lane.answered.load(ordering: .relaxed) == 1)
        }
    }

    static let headerCases: [(fields: [(String, String)], taken: Bool)] = [
        ([("Host", "x"), ("Authorization", "Bearer abc"), ("If-None-Match", "\"v6\""), ("User-Agent", "wrk 4.2\t(x)")], true),
        ([("Host", "x"), ("X-Note", "café")], false),
        ([("Host", "x"), ("X-Note", " a")], false),
        ([("Host", "x"), ("X-Note", "a ")], false),
        ([("Host", "x"), ("X-Note", "a\t")], false),
        ([("Host", "x"), ("X-Note", "a\u{01}b")], false),
        ([("Host", "x"), ("X-Note", "a\u{7F}")], false),
        ([("Host", "x"), ("X Note", "a")], false),
        ([("Host", "x"), ("", "a")], false),
    ]

    /// The lane reads the headers as the parser gave them, so it takes only a request whose every header the router
    /// (in HTTP types) reads the same: a token for a name, visible ASCII for a value, spaces or tabs only inside it.
    /// Anything else — a value `HTTPFields` would legalise, a byte that is not ASCII — is the router's.
    @Test(arguments: headerCases)
    func theLaneTakesOnlyHeadersTheRouterReadsAsParsed(fields: [(String, String)], taken: Bool) {
        let head = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/v1/orders/order-1/history", headers: HTTPHeaders(fields))
        #expect(HistoryLane.readAsParsed(head.headers) == taken)
        #expect((HistoryLane.orderId(of: head) != nil) == taken)
    }

    /// A read whose header is not plain ASCII is answered by the router, the same answer.
    @Test func aReadWithAHeaderNotPlainASCIIIsTheRouters() async throws {
        try await API.run(overTCP: true) { api in
            let lane = try #require(api.lane)
            #expect(try await api.post("order-1", Lifecycle().created).status == .created)
            let uri = "/v1/orders/order-1/history"
            let routed = try await api.get(uri, token: "reader")
            let note = try #require(HTTPField.Name("X-Note"))
            let accented = try await api.request(.get, uri, token: "reader", headers: [note: "café"])
            #expect(accented.status == .ok && accented.bodyText == routed.bodyText)
            #expect(lane.answered.load(ordering: .relaxed) == 0)
            #expect(try await api.request(.get, uri, token: "reader", headers: [note: "cafe"]).bodyText == routed.bodyText)
            #expect(lane.answered.load(ordering: .relaxed) == 1)
        }
    }

    /// A client that shuts its side down right after its request still gets the lane's answer: the end of the input,
    /// read while the lane answers, reaches the router (which then ends the connection) only after the answer.
    @Test func aClientThatHalfClosesAfterItsReadGetsTheLanesAnswer() async throws {
        try await API.run(overTCP: true) { api in
            let lane = try #require(api.lane)
            #expect(try await api.post("order-1", Lifecycle().created).status == .created)
            let rendered = try await api.get("/v1/orders/order-1/history", token: "reader")
            let port = try #require(api.client.port)
            let read = "GET /v1/orders/order-1/history HTTP/1.1\r\nHost: x\r\n"
                + "Authorization: Bearer \(try #require(api.secrets["reader"]))\r\n\r\n"
            for round in 1...3 {
                let answer = try await blocking { try RawHTTP.exchange(port: port, Array(read.utf8), halfClose: true) }
                #expect(answer.statusLine == "HTTP/1.1 200 OK", "\(answer.text)")
                #expect(answer.body == rendered.bodyText)
                #expect(lane.answered.load(ordering: .relaxed) == round)
            }
        }
    }

    /// Once a request waits behind an answer the lane is still working on, the front reads no more from the socket
    /// until that answer is written, so what a pipelining client sends stays bounded; with nothing waiting, the socket
    /// stays read. Driven through the front itself, with the `read`s it passes toward the socket counted, while another
    /// session's lock on `streams` holds the lane's version statement.
    @Test func theFrontReadsNoMoreOnceARequestWaitsBehindALaneAnswer() async throws {
        try await API.run(overTCP: true) { api in
            let lane = try #require(api.lane)
            #expect(try await api.post("order-1", Lifecycle().created).status == .created)
            #expect(try await api.get("/v1/orders/order-1/history", token: "reader").status == .ok)
            let reads = ReadsPassed()
            let channel = NIOAsyncTestingChannel()
            try await channel.pipeline.addHandlers([reads, ConnectionFront(idleTimeout: nil, lane: lane, logger: Logger(label: "test"))])
            try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 8080))
            let loop = channel.testingEventLoop
            func readsPassed() async throws -> Int { try await loop.executeInContext { reads.count } }

            let (locked, released) = (Gate(), Gate())
            let holder = Task {
                defer { locked.open() }
                try await api.tokens.client.withTransaction(logger: Logger(label: "test")) { connection in
                    try await connection.query("LOCK TABLE streams IN ACCESS EXCLUSIVE MODE", logger: Logger(label: "test"))
                    locked.open()
                    await released.wait()
                }
            }
            defer { released.open() }
            await locked.wait()
            let head = HTTPRequestHead(
                version: .http1_1, method: .GET, uri: "/v1/orders/order-1/history",
                headers: ["Host": "x", "Authorization": "Bearer \(try #require(api.secrets["reader"]))"])
            try await channel.writeInbound(HTTPServerRequestPart.head(head))
            try await channel.writeInbound(HTTPServerRequestPart.end(nil))
            channel.read()
            #expect(try await readsPassed() == 1, "the lane answers and nothing waits: the socket stays read")
            try await channel.writeInbound(HTTPServerRequestPart.head(head))
            channel.read()
            channel.read()
            #expect(try await readsPassed() == 1, "a request waits behind the answer: no more is read")

            released.open()
            try await holder.value
            guard case .head(let answer) = try await channel.waitForOutboundWrite(as: HTTPServerResponsePart.self) else {
                Issue.record("the lane's answer begins with its head")
                return
            }
            #expect(answer.status == .ok)
            #expect(lane.answered.load(ordering: .relaxed) == 1)
            // The answer's body and end are written in the same turn of the loop as the read asked for meanwhile.
            #expect(try await readsPassed() == 2, "the answer is written: the read held is asked for, once")
            _ = try? await channel.finish()
        }
    }

    /// The lane's `Date` header is RFC 9110's IMF-fixdate, as Hummingbird's (its own example, and a day of one digit).
    @Test func theDateHeaderIsAnIMFFixdate() {
        #expect(HTTPDate.format(784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.format(1_796_119_200) == "Tue, 01 Dec 2026 10:00:00 GMT")
        #expect(HTTPDate.format(0) == "Thu, 01 Jan 1970 00:00:00 GMT")
    }

    static func comparable(_ headers: HTTPFields) -> [String] {
        headers.filter { $0.name != .requestId && $0.name != .date }.map { "\($0.name.canonicalName): \($0.value)" }.sorted()
    }

    /// The history route's 200s (or `status`) in `/metrics`.
    static func counted(_ api: API, status: Int) async throws -> Int {
        let label = #"hb_requests{http_route="/v1/orders/{orderId}/history",http_request_method="GET",http_response_status_code="\#(status)"} "#
        let text = try await api.get("/metrics", token: nil).bodyText
        guard let line = text.components(separatedBy: "\n").first(where: { $0.hasPrefix(label) }) else { return 0 }
        return Int(Double(line.dropFirst(label.count)) ?? 0)
    }
}

/// Counts the `read`s that pass it toward the socket (its state is the channel's loop's).
private final class ReadsPassed: ChannelOutboundHandler, @unchecked Sendable {
    typealias OutboundIn = Any
    var count = 0

    func read(context: ChannelHandlerContext) {
        count += 1
        context.read()
    }
}
