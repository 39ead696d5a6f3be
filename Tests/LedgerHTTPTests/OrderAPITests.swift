import Foundation
import HTTPTypes
import Hummingbird
import LedgerCore
import LedgerHTTP
@testable import LedgerPostgres
import LedgerTestSupport
import Testing

@Suite("HTTP: posting events and reading orders")
struct OrderAPITests {
    @Test func aFullOrderWalkedEventByEventTellsItsStoryBack() async throws {
        try await API.run { api in
            let lifecycle = Lifecycle()
            for (index, event) in lifecycle.happyPath.enumerated() {
                let answer = try await api.post("order-1", event, token: "writer")
                #expect(answer.status == .created, "\(event.type): \(answer.bodyText)")
                #expect(answer.json["version"] == .int(Int64(index + 1)))
            }
            let order = try await api.get("/v1/orders/order-1", token: "reader")
            #expect(order.status == .ok)
            #expect(order.json["state"] == "finished")
            #expect(order.json["amount"] == ["value": 499, "currency": "USD"])
            #expect(order.json["flags"] == [])
            #expect(order.json["refundedAt"] == .null)

            let history = try await api.get("/v1/orders/order-1/history", token: "reader")
            #expect(history.status == .ok)
            guard case .array(let events)? = history.json["events"] else { Issue.record("no events"); return }
            #expect(events.map { $0["stateAfter"] } == ["created", "payment_queued", "receipt_received", "verified", "granted", "finished"])
            #expect(events.allSatisfy { $0["actor"] == "writer" })

            let transaction = try await api.get("/v1/transactions/\(lifecycle.transactionId)", token: "reader")
            #expect(transaction.status == .ok)
            #expect(transaction.json["granted"] == true)
            #expect(transaction.json["finished"] == true)
            #expect(transaction.json["orderId"] == "order-1")
            #expect(try await api.get("/v1/transactions/never-seen").status == .notFound)
        }
    }

    @Test func aRetryOfAnAcceptedRequestReturnsTheIdenticalBodyMarkedAsAReplay() async throws {
        try await API.run { api in
            let lifecycle = Lifecycle()
            let created = lifecycle.created  // one event id, posted twice
            let first = try await api.post("order-1", created)
            _ = try await api.post("order-1", lifecycle.queued)
            let retry = try await api.post("order-1", created)
            #expect(first.status == .created)
            #expect(retry.status == .ok)
            #expect(retry.headers[HTTPField.Name("Idempotent-Replay")!] == "true")
            #expect(retry.bodyText == first.bodyText)
        }
    }

    @Test func aBatchRecordsTheWholeLifecycleAtOnce() async throws {
        try await API.run { api in
            let lifecycle = Lifecycle()
            let body: JSONValue = ["expectedVersion": 0, "events": .array(lifecycle.happyPath.map(\.json))]
            let answer = try await api.post("order-1", body)
            #expect(answer.status == .created)
            #expect(answer.json["version"] == 6)
            #expect(answer.json["order"]?["state"] == "finished")
            let replay = try await api.post("order-1", body)
            #expect(replay.status == .ok && replay.bodyText == answer.bodyText)
        }
    }

    @Test func theRequestIdIsEchoedAndRecordedWithTheActor() async throws {
        try await API.run { api in
            let answer = try await api.post("order-1", Lifecycle().created.json, token: "writer", headers: [HTTPField.Name("X-Request-Id")!: "req-42"])
            #expect(answer.headers[HTTPField.Name("X-Request-Id")!] == "req-42")
            let stored = try await api.ledger.store.read(.order("order-1"))
            try #require(!stored.isEmpty)
            #expect(stored[0].metadata == ["actor": "writer", "requestId": "req-42"])
            // Without one, each request gets a new random UUID (version 4), lowercased.
            let generated = try await [api.get("/v1/orders/order-1"), api.get("/v1/orders/order-1")].map {
                $0.headers[HTTPField.Name("X-Request-Id")!] ?? ""
            }
            #expect(generated[0] != generated[1])
            for id in generated {
                #expect(UUID(uuidString: id)?.uuidString.lowercased() == id)
                try #require(id.count >= 20, "\(id) is not a version 4 UUID")
                #expect(Array(id)[14] == "4" && "89ab".contains(Array(id)[19]), "\(id) is not a version 4 UUID")
            }
        }
    }

    @Test func historyAsOfShowsOnlyWhatHadBeenRecordedThen() async throws {
        try await API.run { api in
            for event in Lifecycle().happyPath { _ = try await api.post("order-1", event) }
            let full = try await api.get("/v1/orders/order-1/history")
            guard case .array(let events)? = full.json["events"], events.count > 2, case .string(let third)? = events[2]["recordedAt"] else {
                Issue.record("no history"); return
            }
            let past = try await api.get("/v1/orders/order-1/history?asOf=\(third)")
            guard case .array(let pastEvents)? = past.json["events"] else { Issue.record("no past history"); return }
            #expect(pastEvents.count == 3)
            #expect(past.json["order"]?["state"] == "receipt_received")
            #expect(past.json["asOf"] == .string(third))
            #expect(try await api.get("/v1/orders/order-1/history?asOf=yesterday").errorCode == "invalid_request")
        }
    }

    @Test func ordersAreListedByAccountAndStateWithStableKeysetPages() async throws {
        try await API.run { api in
            for n in 0..<5 {
                var lifecycle = Lifecycle()
                lifecycle.accountId = n < 3 ? "acct-x" : "acct-y"
                _ = try await api.post("order-\(n)", lifecycle.created)
            }
            _ = try await api.post("order-0", Lifecycle().cancelled)
            let first = try await api.get("/v1/orders?accountId=acct-x&limit=2")
            #expect(first.json["orders"]?.elements.map { $0["orderId"] } == ["order-0", "order-1"])
            #expect(first.json["nextCursor"] == "order-1")
            let second = try await api.get("/v1/orders?accountId=acct-x&limit=2&cursor=order-1")
            #expect(second.json["orders"]?.elements.map { $0["orderId"] } == ["order-2"])
            #expect(second.json["nextCursor"] == .null)
            let cancelled = try await api.get("/v1/orders?state=cancelled")
            #expect(cancelled.json["orders"]?.elements.count == 1)
            #expect(try await api.get("/v1/orders?limit=501").errorCode == "invalid_request")
            #expect(try await api.get("/v1/orders?state=lost").errorCode == "invalid_request")
        }
    }
}
