import Foundation
import HTTPTypes
import LedgerCore
import LedgerHTTP
@testable import LedgerPostgres
import LedgerTestSupport
import Testing

/// `POST /v1/reconciliations` end to end: the file read as RFC 4180 CSV, a bad file refused naming the line, and an
/// answer bounded however long the file (JSON lists at most 1,000 rows; `Accept: text/csv` streams every row).
@Suite("HTTP: reconciliation reads RFC 4180 and answers within bounds")
struct ReconciliationAPITests {
    static let header = "transaction_id,product_id,amount_minor,currency,status,occurred_at"

    func reconcile(_ api: API, _ csv: String, accept: String? = nil, from: String? = nil, to: String? = nil) async throws -> API.Answer {
        let today = String(RFC3339.format(Date()).prefix(10))
        var headers: HTTPFields = [:]
        if let accept { headers[.accept] = accept }
        return try await api.request(
            .post, "/v1/reconciliations?provider=app_store&from=\(from ?? today)&to=\(to ?? today)", token: "finance",
            body: csv, contentType: "text/csv", headers: headers)
    }

    /// A CSV answer read back with the project's reader: one dictionary per row, by column name.
    func rows(ofCSV text: String) throws -> (header: [String], rows: [[String: String]]) {
        let records = try CSVReader.records(in: Array(text.utf8)).map(\.fields)
        let header = records.first ?? []
        return (header, records.dropFirst().map { Dictionary(zip(header, $0), uniquingKeysWith: { first, _ in first }) })
    }

    @Test func aByteOrderMarkCRLFAndAQuotedLineBreakInAProductIdAreReadAsOneRecordEach() async throws {
        try await API.run { api in
            let lifecycle = Lifecycle()
            for event in lifecycle.happyPath { _ = try await api.post("order-1", event, token: "writer") }
            let today = String(RFC3339.format(Date()).prefix(10))
            let csv = "\u{FEFF}" + Self.header + "\r\n"
                + "\"\(lifecycle.transactionId)\",\"gems.100\",499,USD,paid,\(today)T10:00:00Z\r\n"
                + "px-2,\"gems\r\n100\",499,USD,paid,\(today)T10:00:00Z\r\n"
                + "px-3,gems.100,499,USD,paid,\(today)T10:00:00Z\r\n"
            let answer = try await reconcile(api, csv)
            #expect(answer.status == .ok, "the mark is not part of the first column: \(answer.bodyText)")
            #expect(answer.json["summary"]?["matched"]?["count"] == .int(1), "\(answer.bodyText)")
            #expect(answer.json["summary"]?["malformed"]?["count"] == .int(1), "one record, not two lines: \(answer.bodyText)")
            #expect(answer.json["summary"]?["missing_in_ledger"]?["count"] == .int(1), "\(answer.bodyText)")
            let listed = answer.json["rows"]?.elements ?? []
            #expect(listed.map { $0["result"] } == ["malformed", "missing_in_ledger"], "matched rows are counted, not listed")
            #expect(listed.map { $0["line"] } == [.int(3), .int(5)], "a record is named by the line it starts on")
            if case .string(let problem)? = listed.first?["problem"] { #expect(problem.contains("product_id")) } else {
                Issue.record("the malformed row says why: \(answer.bodyText)")
            }
            #expect(listed.last?["transactionId"] == "px-3")
            // The malformed row keeps what its record said, and names the field that did not parse.
            #expect(listed.first?["transactionId"] == "px-2", "\(answer.bodyText)")
            #expect(listed.first?["field"] == "product_id")
            #expect(listed.first?["provider"]?["amount"] == ["value": 499, "currency": "USD"])
            #expect(listed.first?["provider"]?["status"] == "paid")
            #expect(answer.json["truncated"] == .bool(false) && answer.json["rowsOmitted"] == .int(0))

            let streamed = try await reconcile(api, csv, accept: "text/csv")
            #expect(streamed.status == .ok && streamed.headers[.contentType]?.hasPrefix("text/csv") == true, "\(streamed.bodyText)")
            let (header, rows) = try rows(ofCSV: streamed.bodyText)
            #expect(header == ReconciliationRow.csvHeader)
            #expect(rows.map { $0["result"] } == ["matched", "malformed", "missing_in_ledger"], "every row, matched ones too")
            #expect(rows.map { $0["line"] } == ["2", "3", "5"])
            #expect(rows.first?["order_id"] == "order-1" && rows.first?["provider_amount_minor"] == "499")
            try #require(rows.count == 3)
            #expect(rows[1]["transaction_id"] == "px-2" && rows[1]["provider_amount_minor"] == "499", "\(rows[1])")
        }
    }

    @Test func aFileThatCannotBeReadIsA400NamingTheBodyAndTheLine() async throws {
        try await API.run { api in
            let today = String(RFC3339.format(Date()).prefix(10))
            let good = "px-1,gems.100,499,USD,paid,\(today)T10:00:00Z\n"
            let cases: [(String, String)] = [
                (Self.header + "\n" + good + String(repeating: "x", count: 70_000) + "\n", "line 3: the record is longer than 65536 bytes"),
                (Self.header + "\n" + good + "px-2,\"gems.100,499,USD,paid,\(today)T10:00:00Z\n" + good, "line 3: a quoted field is never closed"),
                (Self.header + "\n\"px-1\"x,gems.100,499,USD,paid,\(today)T10:00:00Z\n", "line 2: a closing quote must be followed"),
            ]
            for (csv, words) in cases {
                for accept in [nil, "text/csv"] {
                    let answer = try await reconcile(api, csv, accept: accept)
                    #expect(answer.status == .badRequest, "\(accept ?? "json"): \(answer.bodyText.prefix(300))")
                    #expect(answer.json["error"]?["details"]?["field"] == "body", "\(answer.bodyText.prefix(300))")
                    if case .string(let message)? = answer.json["error"]?["message"] {
                        #expect(message.hasPrefix(words), "\(message)")
                    } else {
                        Issue.record("\(accept ?? "json"): no error message in \(answer.bodyText.prefix(300))")
                    }
                }
            }
            // A bad period is refused before a CSV answer starts, as before a JSON one.
            let backwards = try await reconcile(api, Self.header + "\n", accept: "text/csv", from: "2026-11-30", to: "2026-11-01")
            #expect(backwards.status == .badRequest && backwards.json["error"]?["details"]?["field"] == "from", "\(backwards.bodyText)")
        }
    }

    @Test func moreDifferingRowsThanTheCapAreCountedAndStreamedButNotListed() async throws {
        try await API.run { api in
            let lifecycle = Lifecycle()
            for event in lifecycle.happyPath { _ = try await api.post("order-1", event, token: "writer") }
            let today = String(RFC3339.format(Date()).prefix(10))
            var csv = Self.header + "\n" + "\(lifecycle.transactionId),gems.100,499,USD,paid,\(today)T10:00:00Z\n"
            for n in 0..<1_005 { csv += "px-\(n),gems.100,499,USD,paid,\(today)T10:00:00Z\n" }

            let answer = try await reconcile(api, csv)
            #expect(answer.status == .ok, "\(answer.bodyText.prefix(300))")
            #expect(answer.json["summary"]?["missing_in_ledger"]?["count"] == .int(1_005))
            #expect(answer.json["summary"]?["matched"]?["count"] == .int(1))
            let listed = answer.json["rows"]?.elements ?? []
            #expect(listed.count == 1_000, "the documented cap")
            #expect(listed.first?["line"] == .int(3) && listed.last?["line"] == .int(1_002), "the first 1,000, in file order")
            #expect(answer.json["truncated"] == .bool(true))
            #expect(answer.json["rowsOmitted"] == .int(5))

            let streamed = try await reconcile(api, csv, accept: "application/json;q=0.5, text/csv")
            #expect(streamed.status == .ok)
            let (_, rows) = try rows(ofCSV: streamed.bodyText)
            #expect(rows.count == 1_006, "every row: the matched one and 1,005 missing")
            #expect(rows.last?["transaction_id"] == "px-1004" && rows.last?["line"] == "1007")
        }
    }
}
