import Foundation
import HTTPTypes
import LedgerCore
@testable import LedgerHTTP
@testable import LedgerPostgres
import NIOCore
import LedgerTestSupport
import Testing

@Suite("API: a history page rendered once is answered again while its order stays as it was")
struct RenderedHistoryAPITests {
    /// The second read of a page is the first's bytes, with its ETag; a new event makes a new answer at once; a
    /// client holding the current ETag gets 304; a revoked token is refused even a page already rendered. Through
    /// the router, and over TCP, where the history lane answers what was rendered (`HistoryLaneTests`).
    @Test(arguments: [false, true])
    func aRenderedPageIsReusedUntilTheOrderMovesAndNeverOutlivesItsToken(overTCP: Bool) async throws {
        try await API.run(overTCP: overTCP) { api in
            var order = Lifecycle()
            for event in [order.created, order.queued] {
                #expect(try await api.post("order-1", event).status == .created)
            }
            let uri = "/v1/orders/order-1/history"
            let first = try await api.get(uri, token: "reader")
            let etag = try #require(first.headers[.eTag])
            #expect(first.status == .ok && etag == "\"h2\"")
            let second = try await api.get(uri, token: "reader")
            #expect(second.bodyText == first.bodyText && second.headers[.eTag] == etag)

            order.transactionId = "2000000000000001"
            #expect(try await api.post("order-1", order.receipt).status == .created)
            let moved = try await api.get(uri, token: "reader")
            #expect(moved.headers[.eTag] == "\"h3\"", "a new event, a new answer")
            #expect(moved.json["events"]?.elements.count == 3 && moved.json["order"]?["state"] == "receipt_received", "\(moved.bodyText)")

            let stale = try await api.request(.get, uri, token: "reader", headers: [.ifNoneMatch: etag])
            #expect(stale.status == .ok && stale.json["events"]?.elements.count == 3)
            let current = try await api.request(.get, uri, token: "reader", headers: [.ifNoneMatch: "\"h3\""])
            #expect(current.status == .notModified && current.bodyText.isEmpty && current.headers[.eTag] == "\"h3\"")
            // If-None-Match as browsers and caches send it: a list, weak tags, or any answer at all.
            for header in ["\"h2\", \"h3\"", "W/\"h3\"", "*"] {
                let listed = try await api.request(.get, uri, token: "reader", headers: [.ifNoneMatch: header])
                #expect(listed.status == .notModified, "If-None-Match: \(header)")
            }
            // Another page of the same order is its own answer.
            let page = try await api.get(uri + "?limit=1", token: "reader")
            #expect(page.json["events"]?.elements.count == 1 && page.json["next"] == 1)

            if let lane = api.lane { #expect(lane.answered.load(ordering: .relaxed) >= 5, "the lane answered the reads of what was rendered") }
            try await api.tokens.revoke(name: "reader")
            let revoked = try await api.get(uri, token: "reader")
            #expect(revoked.status == .unauthorized, "\(revoked.status) \(revoked.bodyText)")
            let held = try await api.request(.get, uri, token: "reader", headers: [.ifNoneMatch: "\"h3\""])
            #expect(held.status == .unauthorized)
        }
    }

    /// An order's answer carries its bytes' tag: a client holding it gets 304 until the order (or its recovery
    /// schedule) changes.
    @Test func anOrderAnswerIsTaggedAndNotSentAgainWhileItStaysTheSame() async throws {
        try await API.run { api in
            let order = Lifecycle()
            #expect(try await api.post("order-1", order.created).status == .created)
            let first = try await api.get("/v1/orders/order-1", token: "reader")
            let etag = try #require(first.headers[.eTag])
            #expect(first.status == .ok && etag.count == 34, "\(etag)")
            #expect(try await api.get("/v1/orders/order-1", token: "reader").headers[.eTag] == etag, "the same answer, the same tag")
            let held = try await api.request(.get, "/v1/orders/order-1", token: "reader", headers: [.ifNoneMatch: "W/\"x\", " + etag])
            #expect(held.status == .notModified && held.bodyText.isEmpty && held.headers[.eTag] == etag)

            #expect(try await api.post("order-1", order.queued).status == .created)
            let moved = try await api.request(.get, "/v1/orders/order-1", token: "reader", headers: [.ifNoneMatch: etag])
            #expect(moved.status == .ok && moved.json["state"] == "payment_queued", "\(moved.bodyText)")
            #expect(moved.headers[.eTag] != nil && moved.headers[.eTag] != etag)
            let other = try await api.request(.get, "/v1/orders/order-2", token: "reader", headers: [.ifNoneMatch: "*"])
            #expect(other.status == .notFound, "no answer to hold")
        }
    }

    /// Past its budget the oldest page rendered is forgotten first; a page rendered again replaces its bytes.
    @Test func renderedPagesStayWithinTheirBudgetOldestForgottenFirst() {
        let pages = RenderedHistories(budget: 10)
        func key(_ id: String) -> RenderedHistories.Key { .init(orderId: id, asOf: nil, after: 0, limit: 100) }
        func page(_ version: Int) -> RenderedHistories.Page { .init(version: version, body: ByteBuffer(string: "abcd")) }
        pages.keep(key("a"), page(1))
        pages.keep(key("b"), page(1))
        pages.keep(key("a"), page(2))
        #expect(pages.page(key("a"))?.version == 2 && pages.page(key("b")) != nil)
        pages.keep(key("c"), page(1))
        #expect(pages.page(key("a")) == nil, "the oldest rendered is forgotten")
        #expect(pages.page(key("b")) != nil && pages.page(key("c")) != nil)
    }
}
