import Foundation
import Hummingbird
import LedgerCore
import LedgerPostgres
import NIOCore
import Synchronization

/// `/v1/reports/revenue`, `/v1/reconciliations` and `/v1/anomalies`: read-only answers for finance.
struct FinanceRoutes {
    typealias Context = LedgerRequestContext
    let finance: Finance

    /// A provider file posted over HTTP is held in memory (the answer is bounded, see `ReconciliationAnswer`); larger
    /// files go through `ledger reconcile`, which streams with flat memory.
    static let maximumFileSize = 32 * 1024 * 1024

    func register(finance: RouterGroup<Context>) {
        finance.get("reports/revenue", use: revenue)
        finance.get("reports/subscriptions", use: subscriptions)
        finance.post("reconciliations", use: reconcile)
        finance.get("anomalies", use: anomalies)
    }

    @Sendable func revenue(_ request: Request, context: Context) async throws -> Response {
        let query = QueryParameters(request)
        try query.onlyAllowing(["from", "to", "groupBy", "timezone"])
        let (from, to) = (try query.periodBound("from"), try query.periodBound("to"))
        let groupBy = try names(query.string("groupBy") ?? "day,currency", RevenueDimension.self, field: "groupBy")
        let timeZone = try query.string("timezone") ?? "UTC"
        // A sum too large for the report is the period's doing: a shorter one gives sums that fit.
        let rows = try await financeCall(field: "from") {
            try await finance.revenue(from: from, to: to, groupBy: groupBy, timeZone: timeZone)
        }
        return JSONResponse.make(status: .ok, body: .object([
            "from": .string(try query.string("from") ?? ""), "to": .string(try query.string("to") ?? ""), "timezone": .string(timeZone),
            "groupBy": .array(groupBy.map { .string($0.rawValue) }), "rows": .array(rows.map(\.json)),
        ]))
    }

    /// Subscriptions per day, product and currency: active, MRR, first purchases, renewals, refunds, churn.
    @Sendable func subscriptions(_ request: Request, context: Context) async throws -> Response {
        let query = QueryParameters(request)
        try query.onlyAllowing(["from", "to", "timezone"])
        let (from, to) = (try query.periodBound("from"), try query.periodBound("to"))
        let timeZone = try query.string("timezone") ?? "UTC"
        let rows = try await financeCall(field: "from") {
            try await finance.subscriptions(from: from, to: to, timeZone: timeZone)
        }
        return JSONResponse.make(status: .ok, body: .object([
            "from": .string(try query.string("from") ?? ""), "to": .string(try query.string("to") ?? ""),
            "timezone": .string(timeZone), "rows": .array(rows.map(\.json)),
        ]))
    }

    /// JSON: the summary and at most `ReconciliationAnswer.maximumRows` rows that are not matched; `Accept: text/csv`:
    /// every row, streamed. A file that cannot be read or a bad period is a 400 before anything is answered.
    @Sendable func reconcile(_ request: Request, context: Context) async throws -> Response {
        let query = QueryParameters(request)
        try query.onlyAllowing(["provider", "from", "to"])
        guard let providerName = try query.string("provider") else { throw APIError.invalidRequest(field: "provider", "provider is required") }
        guard let provider = Provider(rawValue: providerName) else {
            throw APIError.invalidRequest(field: "provider", "provider must be one of \(Provider.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        let (from, to) = (try query.periodBound("from"), try query.periodBound("to"))
        guard request.headers[.contentType]?.hasMediaType("text/csv") == true else {
            throw APIError(.unsupportedMediaType, "unsupported_media_type", "the body must be text/csv", details: ["field": "Content-Type"])
        }
        let file = try await RequestBodyReader.collect(request, upTo: Self.maximumFileSize)
        let bytes = Array(file.readableBytesView)
        if ReconciliationAnswer.wantsCSV(request.headers[.accept]) {
            try await financeCall(field: "body") {
                try Finance.checkReconciliationPeriod(from: from, to: to)
                try ProviderFileReader.check(bytes)
            }
            return ReconciliationAnswer.csv { emit in
                _ = try await finance.reconcile(provider: provider, from: from, to: to, chunks: ByteChunks(bytes: bytes), emit: emit)
            }
        }
        var listing = ReconciliationListing()
        let summary = try await financeCall(field: "body") {
            try await finance.reconcile(provider: provider, from: from, to: to, chunks: ByteChunks(bytes: bytes)) { row in
                listing.add(row)
            }
        }
        return JSONResponse.make(status: .ok, body: listing.json(summary: summary))
    }

    /// An anomalies page holds at most this many (`limit`), 100 unless asked: the list is never built whole.
    static let maximumAnomalyPage = 1000
    static let defaultAnomalyPage = 100

    /// One page of anomalies, kind by kind, each kind by age: `nextCursor` is the `cursor` of the next page (null
    /// on the last). A cursor is only good with the `kind` list it was given with. `orderId` keeps one order's
    /// anomalies (what the console shows on the order's page).
    @Sendable func anomalies(_ request: Request, context: Context) async throws -> Response {
        let query = QueryParameters(request)
        try query.onlyAllowing(["kind", "olderThan", "orderId", "limit", "cursor"])
        let kinds = try names(query.string("kind") ?? "", AnomalyKind.self, field: "kind")
        // Held to the rule of the orders path's id: an id no order could have is the caller's mistake, not an empty list.
        let orderId = try query.string("orderId").map { id in
            guard Identifier.isValidOrderId(id) else { throw APIError.invalidRequest(field: "orderId", "orderId " + Identifier.orderRule) }
            return id
        }
        let olderThan = try query.string("olderThan").map { text in
            guard let duration = ThresholdText.parse(text) else {
                throw APIError.invalidRequest(field: "olderThan", "olderThan must be a number and a unit s, m, h or d, e.g. 90s, 10m, 24h, at most 100 years")
            }
            return duration
        }
        let limit = try query.integer("limit", in: 1...Int64(Self.maximumAnomalyPage)) ?? Int64(Self.defaultAnomalyPage)
        let cursor = try query.string("cursor").map { text in
            guard let cursor = AnomalyCursor(text), kinds.isEmpty || kinds.contains(cursor.kind) else {
                throw APIError.invalidRequest(field: "cursor", "cursor must be the nextCursor of a page of this listing, with the same kind")
            }
            return cursor
        }
        let page = try await finance.anomalies(kinds: kinds, olderThan: olderThan, orderId: orderId, limit: Int(limit), after: cursor)
        let now = Date()
        return JSONResponse.make(status: .ok, body: .object([
            "anomalies": .array(page.anomalies.map { $0.json(now: now) }),
            "nextCursor": page.nextCursor.map { .string($0.description) } ?? .null,
        ]))
    }

    /// A comma-separated parameter of known names, each once; an unknown, empty or repeated one is a 400 naming `field`.
    private func names<Value: RawRepresentable<String> & CaseIterable & Hashable>(
        _ text: String, _ type: Value.Type, field: String
    ) throws -> [Value] {
        do {
            return try NameList.parse(text, as: type)
        } catch {
            throw APIError.invalidRequest(field: field, "\(field): \(error)")
        }
    }

    /// Turns the finance layer's refusals of bad input into 400s: the period names `from`, a time zone `timezone`,
    /// and a sum out of range the input it came from, `field`.
    private func financeCall<T>(field: String, _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as FinanceError {
            let named = switch error {
            case .emptyPeriod: "from"
            case .unknownTimeZone: "timezone"
            case .amountOutOfRange: field
            }
            throw APIError.invalidRequest(field: named, error.description)
        } catch let error as ProviderFileError {
            throw APIError.invalidRequest(field: "body", error.description)
        }
    }
}
