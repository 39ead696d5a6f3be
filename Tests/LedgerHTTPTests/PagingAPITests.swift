import Foundation
import HTTPTypes
import LedgerCore
import LedgerHTTP
@testable import LedgerPostgres
import LedgerTestSupport
import Testing

/// No request makes the service build an answer of unbounded size: a history and the anomalies come a bounded page
/// at a time, and read page by page they are exactly the whole.
@Suite("HTTP: long histories and anomaly lists, page by page")
struct PagingAPITests {
    @Test func aLongHistoryReadPageByPageEqualsTheWholeAsOfAnyMoment() async throws {
        try await API.run { api in
            try await recordLongOrder("long", failures: 17, on: api.ledger)  // 23 events
            let whole = try #require(try await api.ledger.history("long"))
            let pages = try await historyPages(api, "/v1/orders/long/history?limit=4")
            #expect(pages.count == 6)
            #expect(pages.allSatisfy { ($0["events"]?.elements.count ?? 0) <= 4 })
            #expect(pages.dropLast().allSatisfy { $0["next"] != .null })
            #expect(pages.last?["next"] == .null)
            #expect(pages.flatMap { $0["events"]?.elements ?? [] } == whole.entries.map(\.json))
            #expect(pages.last?["order"] == whole.order?.json)

            // As of a moment in the middle: every page sees only what had been recorded then, states included.
            try #require(whole.entries.count >= 10)
            let moment = whole.entries[9].event.recordedAt
            let past = try #require(try await api.ledger.history("long", asOf: moment))
            #expect(past.entries.count == 10)
            let pastPages = try await historyPages(api, "/v1/orders/long/history?limit=3&asOf=\(RFC3339.format(moment))")
            #expect(pastPages.count == 4)
            #expect(pastPages.flatMap { $0["events"]?.elements ?? [] } == past.entries.map(\.json))
            #expect(pastPages.last?["order"] == past.order?.json)
            #expect(pastPages.allSatisfy { $0["asOf"] == .string(RFC3339.format(moment)) })
        }
    }

    @Test func aHistoryAskedWithoutALimitComesAHundredEventsAtATime() async throws {
        try await API.run { api in
            try await recordLongOrder("batch", failures: 99, on: api.ledger, oneAppend: true)  // 105 events
            let first = try await api.get("/v1/orders/batch/history")
            #expect(first.status == .ok)
            #expect(first.json["events"]?.elements.count == 100)
            #expect(first.json["next"] == 100)
            #expect(first.json["order"]?["version"] == 100)
            let second = try await api.get("/v1/orders/batch/history?after=100")
            #expect(second.json["events"]?.elements.map { $0["version"] } == [101, 102, 103, 104, 105])
            #expect(second.json["next"] == .null)
            #expect(second.json["order"]?["state"] == "finished")
        }
    }

    @Test func historyPagingParametersAreCheckedNamingTheField() async throws {
        try await API.run { api in
            try await recordLongOrder("short", failures: 0, on: api.ledger)
            for (query, field) in [("limit=0", "limit"), ("limit=1001", "limit"), ("limit=ten", "limit"), ("after=-1", "after"),
                                   ("after=x", "after"), ("after=2147483648", "after"), ("page=2", "page")] {
                let answer = try await api.get("/v1/orders/short/history?\(query)")
                #expect(answer.status == .badRequest, "\(query)")
                #expect(answer.json["error"]?["details"]?["field"] == .string(field), "\(query): \(answer.bodyText)")
            }
            #expect(try await api.get("/v1/orders/short/history?limit=1000").status == .ok)
            let beyond = try await api.get("/v1/orders/short/history?after=50")
            #expect(beyond.status == .ok && beyond.json["events"] == [] && beyond.json["next"] == .null)
            #expect(beyond.json["order"]?["state"] == "finished", "the order after everything before the page")
            #expect(try await api.get("/v1/orders/nobody/history?after=3").status == .notFound)
        }
    }

    @Test func anomaliesReadPageByPageAreTheWholeListInTheSameOrder() async throws {
        try await API.run { api in
            let metadata = EventMetadata(actor: "test")
            for n in 0..<5 {  // lost: a receipt, never credited
                let lifecycle = Lifecycle()
                _ = try await api.ledger.record(orderId: "lost-\(n)", events: [lifecycle.created, lifecycle.queued, lifecycle.receipt], metadata: metadata)
            }
            for n in 0..<3 {  // granted, never finished
                let lifecycle = Lifecycle()
                _ = try await api.ledger.record(
                    orderId: "unfinished-\(n)", events: Array(lifecycle.happyPath.dropLast()), metadata: metadata)
            }
            // One order refused twice: two rows of one order, told apart by their refusal.
            let grab = Lifecycle()
            _ = try await api.ledger.record(orderId: "grab", events: [grab.created, grab.queued, grab.receipt, grab.verified], metadata: metadata)
            for _ in 0..<2 {
                #expect(try await api.post("grab", grab.granted(to: "acct-someone-else")).status == .conflict)
            }
            let listing = "/v1/anomalies?kind=lost_order,not_finished,refused_grant&olderThan=0s"
            let whole = try await api.get(listing + "&limit=1000", token: "finance")
            #expect(whole.json["nextCursor"] == .null)
            let all = whole.json["anomalies"]?.elements ?? []
            #expect(all.count == 11, "5 lost, grab lost, 3 unfinished, 2 refusals of grab")
            var pages: [JSONValue] = []
            var cursor: String?
            repeat {
                let page = try await api.get(listing + "&limit=2" + (cursor.map { "&cursor=\($0)" } ?? ""), token: "finance")
                #expect(page.status == .ok, "\(page.bodyText)")
                pages.append(page.json)
                if case .string(let next)? = page.json["nextCursor"] { cursor = next } else { cursor = nil }
            } while cursor != nil && pages.count < 20
            #expect(pages.count == 6)
            #expect(pages.allSatisfy { ($0["anomalies"]?.elements.count ?? 0) <= 2 })
            let paged = pages.flatMap { $0["anomalies"]?.elements ?? [] }
            #expect(paged.map(withoutAge) == all.map(withoutAge))
            #expect(paged.filter { $0["kind"] == "refused_grant" }.count == 2)
        }
    }

    @Test func anomaliesAskedWithoutALimitComeAHundredAtATime() async throws {
        try await API.run { api in
            for n in 0..<101 {
                let lifecycle = Lifecycle()
                _ = try await api.ledger.record(orderId: "stuck-\(n)", events: [lifecycle.created, lifecycle.queued], metadata: EventMetadata(actor: "test"))
            }
            let first = try await api.get("/v1/anomalies?kind=stuck_payment&olderThan=0s", token: "finance")
            #expect(first.json["anomalies"]?.elements.count == 100)
            guard case .string(let cursor)? = first.json["nextCursor"] else { Issue.record("no cursor: \(first.bodyText)"); return }
            let second = try await api.get("/v1/anomalies?kind=stuck_payment&olderThan=0s&cursor=\(cursor)", token: "finance")
            #expect(second.json["anomalies"]?.elements.count == 1)
            #expect(second.json["nextCursor"] == .null)
        }
    }

    @Test func anomalyPagingParametersAreCheckedNamingTheField() async throws {
        try await API.run { api in
            for (query, field) in [("limit=0", "limit"), ("limit=1001", "limit"), ("limit=many", "limit"),
                                   ("cursor=nonsense", "cursor"), ("cursor=lost_order,yesterday,order-1", "cursor"),
                                   ("cursor=ghost,2026-11-22T10:00:00Z,order-1", "cursor"),
                                   ("cursor=lost_order,2026-11-22T10:00:00Z,", "cursor"),
                                   ("kind=lost_order&cursor=not_finished,2026-11-22T10:00:00Z,order-1", "cursor")] {
                let answer = try await api.get("/v1/anomalies?\(query)", token: "finance")
                #expect(answer.status == .badRequest, "\(query)")
                #expect(answer.json["error"]?["details"]?["field"] == .string(field), "\(query): \(answer.bodyText)")
            }
            let valid = try await api.get("/v1/anomalies?kind=lost_order&cursor=lost_order,2026-11-22T10:00:00Z,order-1", token: "finance")
            #expect(valid.status == .ok && valid.json["anomalies"] == [] && valid.json["nextCursor"] == .null)
        }
    }

    /// Every page of a history, following `next` from the first.
    func historyPages(_ api: API, _ uri: String) async throws -> [JSONValue] {
        var pages: [JSONValue] = []
        var after: Int64 = 0
        while pages.count < 100 {
            let page = try await api.get(uri + "&after=\(after)")
            #expect(page.status == .ok, "\(page.bodyText)")
            pages.append(page.json)
            guard case .int(let next)? = page.json["next"] else { break }
            after = next
        }
        return pages
    }

    /// An anomaly without its age, which changes from one request to the next.
    func withoutAge(_ anomaly: JSONValue) -> JSONValue {
        guard case .object(var members) = anomaly else { return anomaly }
        members["ageSeconds"] = nil
        return .object(members)
    }
}
