import Foundation
import HTTPTypes
import LedgerCore
import LedgerHTTP
@testable import LedgerPostgres
import LedgerTestSupport
import Testing

@Suite("HTTP: finance reports, reconciliation and anomalies")
struct FinanceAPITests {
    @Test func revenueReconciliationAndAnomaliesAnswerFinance() async throws {
        try await API.run { api in
            let lifecycle = Lifecycle()
            for event in lifecycle.happyPath { _ = try await api.post("order-1", event, token: "writer") }
            let today = String(RFC3339.format(Date()).prefix(10))

            let revenue = try await api.get("/v1/reports/revenue?from=\(today)&to=\(today)&groupBy=product,currency", token: "finance")
            #expect(revenue.status == .ok)
            #expect(revenue.json["rows"]?.elements.first?["granted"]?["amount"] == .int(499))
            #expect(revenue.json["rows"]?.elements.first?["productId"] == "gems.100")
            #expect(revenue.json["rows"]?.elements.first?["net"] == .int(499))
            // A period may also end at a time: one that ends before the grant holds nothing.
            let beforeGrant = RFC3339.format(Date().addingTimeInterval(-60))
            let early = try await api.get("/v1/reports/revenue?from=\(today)&to=\(beforeGrant)", token: "finance")
            #expect(early.status == .ok && early.json["rows"]?.elements.isEmpty == true, "\(early.bodyText)")
            #expect(early.json["to"] == .string(beforeGrant))
            let notATime = try await api.get("/v1/reports/revenue?from=\(today)T08:00&to=\(today)", token: "finance")
            #expect(notATime.status == .badRequest && notATime.json["error"]?["details"]?["field"] == "from", "\(notATime.bodyText)")

            let csv = "transaction_id,product_id,amount_minor,currency,status,occurred_at\n"
                + "\(lifecycle.transactionId),gems.100,499,USD,paid,\(today)T10:00:00Z\nnope\n"
            let reconciled = try await api.request(
                .post, "/v1/reconciliations?provider=app_store&from=\(today)&to=\(today)", token: "finance", body: csv,
                contentType: "text/csv")
            #expect(reconciled.status == .ok, "\(reconciled.bodyText)")
            #expect(reconciled.json["summary"]?["matched"]?["count"] == .int(1))
            #expect(reconciled.json["summary"]?["matched"]?["amounts"]?["USD"] == .int(499))
            #expect(reconciled.json["rows"]?.elements.map { $0["result"] } == ["malformed"], "matched rows are counted, not listed")
            #expect(reconciled.json["rows"]?.elements.last?["line"] == .int(3))

            let anomalies = try await api.get("/v1/anomalies?kind=not_finished,lost_order&olderThan=0s", token: "finance")
            #expect(anomalies.status == .ok)
            #expect(anomalies.json["anomalies"]?.elements.isEmpty == true, "a finished order is no anomaly")
        }
    }

    /// A lost order's detail says what is known of its payment, by state (only `verified` is proven paid: "paid but
    /// not credited" was said of receipts never verified too), and not the time again (it is `since`); the money at
    /// stake is its own field.
    @Test func aLostOrdersDetailSaysWhatIsKnownAndTheMoneyAtStake() async throws {
        try await API.run { api in
            let lifecycle = Lifecycle()
            for event in [lifecycle.created, lifecycle.queued, lifecycle.receipt] { _ = try await api.post("lost-1", event, token: "writer") }
            let answer = try await api.get("/v1/anomalies?kind=lost_order&olderThan=0s", token: "finance")
            let lost = try #require(answer.json["anomalies"]?.elements.first)
            #expect(lost["detail"] == "receipt received, never verified: not credited", "\(answer.bodyText)")
            #expect(lost["amount"] == ["value": 499, "currency": "USD"], "\(answer.bodyText)")
        }
    }

    /// `orderId` keeps one order's anomalies, of every kind (its own query's order id), page after page; an id no
    /// order could have is a 400 naming `orderId`, not an empty list.
    @Test func anomaliesOfOneOrder() async throws {
        try await API.run { api in
            let metadata = EventMetadata(actor: "test")
            var grab = Lifecycle()
            grab.accountId = "acct-alice"
            _ = try await api.ledger.record(orderId: "grab", events: [grab.created, grab.queued, grab.receipt, grab.verified], metadata: metadata)
            for _ in 0..<2 {
                #expect(try await api.post("grab", grab.granted(to: "acct-mallory"), token: "writer").status == .conflict)
            }
            for other in ["lost-1", "lost-2"] {
                let lifecycle = Lifecycle()
                _ = try await api.ledger.record(
                    orderId: other, events: [lifecycle.created, lifecycle.queued, lifecycle.receipt, lifecycle.verified], metadata: metadata)
                #expect(try await api.post(other, lifecycle.granted(to: "acct-mallory"), token: "writer").status == .conflict)
            }
            let everyOrder = try await api.get("/v1/anomalies?olderThan=0s", token: "finance")
            #expect(Set(everyOrder.json["anomalies"]?.elements.compactMap { $0["orderId"] } ?? []) == ["grab", "lost-1", "lost-2"])

            let one = try await api.get("/v1/anomalies?olderThan=0s&orderId=grab", token: "finance")
            #expect(one.status == .ok, "\(one.bodyText)")
            let listed = one.json["anomalies"]?.elements ?? []
            #expect(listed.map { $0["kind"] } == ["lost_order", "refused_grant", "refused_grant"], "\(one.bodyText)")
            #expect(listed.allSatisfy { $0["orderId"] == "grab" }, "\(one.bodyText)")
            // Page by page (the cursor's binds and the order's together): the same rows.
            var paged: [JSONValue] = []
            var cursor: String?
            repeat {
                let page = try await api.get("/v1/anomalies?olderThan=0s&orderId=grab&limit=1" + (cursor.map { "&cursor=\($0)" } ?? ""), token: "finance")
                #expect(page.status == .ok, "\(page.bodyText)")
                paged += page.json["anomalies"]?.elements ?? []
                if case .string(let next)? = page.json["nextCursor"] { cursor = next } else { cursor = nil }
            } while cursor != nil && paged.count < 10
            #expect(paged.map { $0["kind"] } == listed.map { $0["kind"] } && paged.allSatisfy { $0["orderId"] == "grab" })
            let none = try await api.get("/v1/anomalies?olderThan=0s&orderId=order-never", token: "finance")
            #expect(none.status == .ok && none.json["anomalies"] == .array([]), "\(none.bodyText)")

            for bad in ["..", "a%20b", "a/b", String(repeating: "x", count: 129)] {
                let answer = try await api.get("/v1/anomalies?orderId=\(bad)", token: "finance")
                #expect(answer.status == .badRequest, "\(bad): \(answer.bodyText)")
                #expect(answer.json["error"]?["details"]?["field"] == "orderId", "\(bad): \(answer.bodyText)")
            }
        }
    }

    /// `groupBy=product,product` once killed `ledger serve` (a dictionary built from duplicate keys). A repeated,
    /// empty or doubly-given name is the caller's mistake: 400 naming the parameter and the name, and the service
    /// goes on answering.
    @Test func repeatedOrEmptyNamesInAListAreRefusedNotACrash() async throws {
        try await API.run { api in
            for event in Lifecycle().happyPath { _ = try await api.post("order-1", event, token: "writer") }
            let today = String(RFC3339.format(Date()).prefix(10))
            let period = "/v1/reports/revenue?from=\(today)&to=\(today)"
            let cases: [(uri: String, field: String, words: String)] = [
                (period + "&groupBy=product,product", "groupBy", "groupBy: product is named more than once"),
                (period + "&groupBy=day,currency,day", "groupBy", "groupBy: day is named more than once"),
                (period + "&groupBy=currency,currency", "groupBy", "groupBy: currency is named more than once"),
                (period + "&groupBy=day,,product", "groupBy", "groupBy: a name is empty"),
                (period + "&groupBy=day,product,", "groupBy", "groupBy: a name is empty"),
                (period + "&groupBy=,day", "groupBy", "groupBy: a name is empty"),
                (period + "&groupBy=%2C", "groupBy", "groupBy: a name is empty"),
                (period + "&groupBy=product%2Cproduct", "groupBy", "groupBy: product is named more than once"),
                (period + "&groupBy=day&groupBy=day", "groupBy", "groupBy is given more than once"),
                (period + "&groupBy=day&groupBy=product", "groupBy", "groupBy is given more than once"),
                (period + "&from=\(today)", "from", "from is given more than once"),
                ("/v1/anomalies?kind=lost_order,lost_order", "kind", "kind: lost_order is named more than once"),
                ("/v1/anomalies?kind=lost_order,not_finished,lost_order", "kind", "kind: lost_order is named more than once"),
                ("/v1/anomalies?kind=lost_order,", "kind", "kind: a name is empty"),
                ("/v1/anomalies?kind=lost_order&kind=not_finished", "kind", "kind is given more than once"),
                ("/v1/events?limit=1&limit=2", "limit", "limit is given more than once"),
                ("/v1/orders?cursor=a&cursor=b", "cursor", "cursor is given more than once"),
            ]
            for (uri, field, words) in cases {
                let answer = try await api.get(uri, token: "all")
                #expect(answer.status == .badRequest, "\(uri): \(answer.status) \(answer.bodyText)")
                #expect(answer.errorCode == "invalid_request", "\(uri): \(answer.bodyText)")
                #expect(answer.json["error"]?["details"]?["field"] == .string(field), "\(uri): \(answer.bodyText)")
                #expect(answer.refusalMessage.hasPrefix(words), "\(uri): \(answer.bodyText)")
            }
            // Still serving, and every name once still reports.
            let revenue = try await api.get(period + "&groupBy=product,day,provider,currency", token: "finance")
            #expect(revenue.status == .ok, "\(revenue.bodyText)")
            #expect(revenue.json["rows"]?.elements.first?["productId"] == "gems.100")
            #expect(revenue.json["rows"]?.elements.first?["provider"] == "app_store")
            #expect(revenue.json["rows"]?.elements.first?["granted"]?["amount"] == .int(499))
        }
    }

    /// The report library itself, given a repeated dimension (the routes refuse one): the same rows as without it.
    @Test func aRepeatedDimensionReachingTheReportIsReadOnce() async throws {
        try await API.run { api in
            for event in Lifecycle().happyPath { _ = try await api.post("order-1", event, token: "writer") }
            let today = String(RFC3339.format(Date()).prefix(10))
            let report = RevenueReport(client: api.ledger.client)
            let once = try await report.rows(from: .day(today), to: .day(today), groupBy: [.product, .currency], timeZone: "UTC")
            let twice = try await report.rows(
                from: .day(today), to: .day(today), groupBy: [.product, .product, .currency, .currency], timeZone: "UTC")
            #expect(once.count == 1 && once.first?.grantedAmount == 499)
            #expect(twice == once)
            let anomalies = try await AnomalyFinder(client: api.ledger.client).find(kinds: [.notFinished, .notFinished], olderThan: .zero)
            #expect(anomalies.isEmpty)
        }
    }

    /// One write token used to make a day's revenue unanswerable for good: a refund of Int64.max (or in another
    /// currency) on two granted orders, and the day's sum passed what a report can hold. An amount is now at most
    /// `Money.maximumValue` and a refund at most what was paid, in the order's currency; the report answers.
    @Test func noEventCanMakeADaysRevenueUnanswerable() async throws {
        try await API.run { api in
            var huge = Lifecycle()
            huge.amount = Money(value: .max, currency: "USD")
            let created = try await api.post("huge", huge.created, token: "writer")
            #expect(created.status == .badRequest, "\(created.bodyText)")
            #expect(created.json["error"]?["details"]?["field"] == "data.amount.value", "\(created.bodyText)")
            for n in 0..<2 {
                let lifecycle = Lifecycle()
                for event in lifecycle.happyPath {
                    #expect(try await api.post("paid-\(n)", event, token: "writer").status == .created)
                }
                for (amount, status) in [(Int64.max, HTTPResponse.Status.badRequest), (500, .conflict)] {
                    let refund = Submission(eventId: UUID(), type: "order.refunded", data: [
                        "transactionId": .string(lifecycle.transactionId), "amount": ["value": .int(amount), "currency": "USD"],
                    ])
                    #expect(try await api.post("paid-\(n)", refund, token: "writer").status == status, "a refund of \(amount)")
                }
                let euros = Submission(eventId: UUID(), type: "order.refunded", data: [
                    "transactionId": .string(lifecycle.transactionId), "amount": ["value": 1, "currency": "EUR"],
                ])
                let answer = try await api.post("paid-\(n)", euros, token: "writer")
                #expect(answer.status == .conflict)
                #expect(answer.errorCode == "amount_mismatch", "\(answer.bodyText)")
            }
            let today = String(RFC3339.format(Date()).prefix(10))
            let revenue = try await api.get("/v1/reports/revenue?from=\(today)&to=\(today)&groupBy=currency", token: "finance")
            #expect(revenue.status == .ok, "\(revenue.bodyText)")
        }
    }

    /// A provider's file is not bounded by the event rules: its amounts may reach Int64.max, so sums can pass it: a
    /// clear 400 naming the input, never a trap (reconciliation sums in Swift).
    @Test func reconciliationSumsPastInt64AreRefusedNotATrapOrA500() async throws {
        try await API.run { api in
            var lifecycle = Lifecycle()
            lifecycle.amount = Money(value: Money.maximumValue, currency: "USD")
            for event in lifecycle.happyPath {
                #expect(try await api.post("largest", event, token: "writer").status == .created)
            }
            let today = String(RFC3339.format(Date()).prefix(10))
            let max = Int64.max
            let csv = "transaction_id,product_id,amount_minor,currency,status,occurred_at\n"
                + "px-1,gems.100,\(max),USD,paid,\(today)T10:00:00Z\npx-2,gems.100,\(max),USD,paid,\(today)T10:00:00Z\n"
            let reconciled = try await api.request(
                .post, "/v1/reconciliations?provider=app_store&from=\(today)&to=\(today)", token: "finance", body: csv,
                contentType: "text/csv")
            #expect(reconciled.status == .badRequest, "\(reconciled.bodyText)")
            #expect(reconciled.json["error"]?["details"]?["field"] == "body", "\(reconciled.bodyText)")
            #expect(reconciled.refusalMessage.contains("USD add up past"), "\(reconciled.bodyText)")
            // Amounts that fall in different results are separate sums, each exact.
            let one = "transaction_id,product_id,amount_minor,currency,status,occurred_at\n"
                + "px-1,gems.100,\(max),USD,paid,\(today)T10:00:00Z\n"
            let single = try await api.request(
                .post, "/v1/reconciliations?provider=app_store&from=\(today)&to=\(today)", token: "finance", body: one,
                contentType: "text/csv")
            #expect(single.status == .ok, "\(single.bodyText)")
            #expect(single.json["summary"]?["missing_in_ledger"]?["amounts"]?["USD"] == .int(max), "\(single.bodyText)")
            #expect(single.json["summary"]?["missing_at_provider"]?["amounts"]?["USD"] == .int(Money.maximumValue), "\(single.bodyText)")
        }
    }

    /// Numbers past Int64 (or past the route's range) in `limit`, `after`, `olderThan`: 400 naming them.
    @Test func hugeNumbersInQueryParametersAreRefusedNamingThem() async throws {
        try await API.run { api in
            let cases: [(String, String)] = [
                ("/v1/events?after=9223372036854775807", "after"),
                ("/v1/events?after=9223372036854775808", "after"),
                ("/v1/events?after=-1", "after"),
                ("/v1/events?limit=99999999999999999999999", "limit"),
                ("/v1/events?limit=1001", "limit"),
                ("/v1/events?limit=-9223372036854775808", "limit"),
                ("/v1/orders?limit=9223372036854775807", "limit"),
                ("/v1/anomalies?olderThan=9223372036854775807s", "olderThan"),
                ("/v1/anomalies?olderThan=9223372036854775807d", "olderThan"),
                ("/v1/anomalies?olderThan=99999999999999999999999s", "olderThan"),
                ("/v1/anomalies?olderThan=106751991167300d", "olderThan"),
                ("/v1/reports/revenue?from=9999-12-31&to=99999-12-31", "to"),
            ]
            for (uri, field) in cases {
                let answer = try await api.get(uri, token: "all")
                #expect(answer.status == .badRequest && answer.json["error"]?["details"]?["field"] == .string(field), "\(uri): \(answer.bodyText)")
            }
            let edge = try await api.get("/v1/reports/revenue?from=0001-01-01&to=9999-12-31&timezone=Pacific/Kiritimati", token: "finance")
            #expect(edge.status == .ok, "\(edge.bodyText)")
            let oldest = try await api.get("/v1/anomalies?olderThan=36600d", token: "finance")
            #expect(oldest.status == .ok, "\(oldest.bodyText)")
        }
    }

    @Test func badFinanceParametersAreRefusedNamingThem() async throws {
        try await API.run { api in
            let cases: [(String, String)] = [
                ("/v1/reports/revenue?to=2026-11-30", "from"),
                ("/v1/reports/revenue?from=2026-02-30&to=2026-03-01", "from"),
                ("/v1/reports/revenue?from=2026-11-01&to=2026-11-30&groupBy=planet", "groupBy"),
                ("/v1/reports/revenue?from=2026-11-01&to=2026-11-30&timezone=Mars/Olympus", "timezone"),
                ("/v1/reports/revenue?from=2026-11-30&to=2026-11-01", "from"),
                ("/v1/anomalies?kind=ghost", "kind"),
                ("/v1/anomalies?olderThan=soon", "olderThan"),
                ("/v1/anomalies?olderThan=91404210d", "olderThan"),
                ("/v1/anomalies?olderThan=-5m", "olderThan"),
                ("/v1/orders?accountId=a%00b", "accountId"),  // held to the id rule before it reaches SQL
            ]
            for (uri, field) in cases {
                let answer = try await api.get(uri, token: "all")
                #expect(answer.status == .badRequest && answer.json["error"]?["details"]?["field"] == .string(field), "\(uri): \(answer.bodyText)")
            }
            let noHeader = try await api.request(
                .post, "/v1/reconciliations?provider=app_store&from=2026-11-01&to=2026-11-30", token: "finance",
                body: "a,b\n1,2\n", contentType: "text/csv")
            #expect(noHeader.status == .badRequest && noHeader.bodyText.contains("transaction_id"))
            let json = try await api.request(
                .post, "/v1/reconciliations?provider=app_store&from=2026-11-01&to=2026-11-30", token: "finance", body: "{}")
            #expect(json.status == .unsupportedMediaType)
        }
    }
}

extension API.Answer {
    /// The error's message, or "" when the answer is not an error.
    var refusalMessage: String {
        if case .string(let message)? = json["error"]?["message"] { message } else { "" }
    }
}
