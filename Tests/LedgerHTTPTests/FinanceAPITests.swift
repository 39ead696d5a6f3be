import Foundation
import LedgerCore
import LedgerHTTP
import LedgerPostgres
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
                ("/v1/orders?accountId=a%00b", "request"),
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
