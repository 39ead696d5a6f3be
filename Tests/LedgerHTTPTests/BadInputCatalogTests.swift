import Foundation
import HTTPTypes
import Hummingbird
import LedgerCore
import LedgerHTTP
@testable import LedgerPostgres
import LedgerTestSupport
import PostgresNIO
import Testing

/// Malformed requests, each with the documented status and code; none may write anything.
@Suite("HTTP: the bad-input catalog")
struct BadInputCatalogTests {
    struct BadRequest: CustomStringConvertible {
        var name: String
        var body: String
        var orderId = "o-1"
        var contentType: String? = "application/json"
        var token: String? = "all"
        var status: HTTPResponse.Status = .badRequest
        var code = "invalid_request"
        /// The `details.field` the refusal must name, when the case is about one field (so that an earlier refusal
        /// of something else cannot pass for it).
        var field: String?
        var headers: HTTPFields = [:]
        var description: String { name }
    }

    /// An event body with `data` (and its other members) replaced.
    static func event(_ type: String = "order.created", data: String, eventId: String = "\"\(UUID().uuidString)\"") -> String {
        "{\"eventId\":\(eventId),\"type\":\"\(type)\",\"data\":\(data)}"
    }

    static let goodData = #"{"accountId":"a-1","productId":"p-1","amount":{"value":499,"currency":"USD"},"provider":"app_store"}"#
    static func created(replacing key: String, with value: String) -> String {
        var members = [
            "accountId": #""a-1""#, "productId": #""p-1""#, "amount": #"{"value":499,"currency":"USD"}"#, "provider": #""app_store""#,
        ]
        members[key] = value
        return event(data: "{" + members.map { "\"\($0.key)\":\($0.value)" }.joined(separator: ",") + "}")
    }

    static let injection = "'; DROP TABLE events; --"

    static let catalog: [BadRequest] = [
        BadRequest(name: "empty body", body: ""),
        BadRequest(name: "truncated JSON", body: #"{"eventId": "#),
        BadRequest(name: "trailing comma", body: #"{"eventId":"x",}"#),
        BadRequest(name: "a JSON array", body: "[]"),
        BadRequest(name: "a JSON string", body: #""order.created""#),
        BadRequest(name: "null", body: "null"),
        BadRequest(name: "duplicate keys", body: #"{"type":"a","type":"b"}"#),
        BadRequest(name: "NaN", body: event(data: #"{"amount":NaN}"#)),
        BadRequest(name: "lone surrogate", body: event(data: #"{"accountId":"\ud800"}"#)),
        BadRequest(name: "missing eventId", body: #"{"type":"order.created","data":{}}"#),
        BadRequest(name: "eventId not a UUID", body: event(data: goodData, eventId: #""not-a-uuid""#)),
        BadRequest(name: "eventId a number", body: event(data: goodData, eventId: "42")),
        BadRequest(name: "type a number", body: #"{"eventId":"\#(UUID().uuidString)","type":7,"data":{}}"#),
        BadRequest(name: "unknown type", body: event("order.teleported", data: "{}"), status: .unprocessableContent, code: "unknown_event_type"),
        BadRequest(name: "data an array", body: event(data: "[]")),
        BadRequest(name: "accountId a number", body: created(replacing: "accountId", with: "7")),
        BadRequest(name: "accountId empty", body: created(replacing: "accountId", with: #""""#)),
        BadRequest(name: "accountId 129 characters", body: created(replacing: "accountId", with: "\"\(String(repeating: "a", count: 129))\"")),
        BadRequest(name: "accountId with a NUL", body: created(replacing: "accountId", with: #""a\u0000b""#)),
        BadRequest(name: "accountId with a right-to-left override", body: created(replacing: "accountId", with: "\"a\u{202E}b\"")),
        BadRequest(name: "accountId with a zero-width space", body: created(replacing: "accountId", with: "\"a\u{200B}b\"")),
        BadRequest(name: "accountId in Cyrillic look-alikes", body: created(replacing: "accountId", with: "\"аcct\"")),
        BadRequest(name: "accountId an SQL injection", body: created(replacing: "accountId", with: "\"\(injection)\"")),
        BadRequest(name: "productId an SQL injection", body: created(replacing: "productId", with: "\"\(injection)\"")),
        BadRequest(name: "provider an SQL injection", body: created(replacing: "provider", with: "\"\(injection)\"")),
        BadRequest(name: "currency an SQL injection", body: created(replacing: "amount", with: "{\"value\":1,\"currency\":\"\(injection)\"}")),
        BadRequest(name: "negative amount", body: created(replacing: "amount", with: #"{"value":-1,"currency":"USD"}"#)),
        BadRequest(name: "fractional amount", body: created(replacing: "amount", with: #"{"value":4.99,"currency":"USD"}"#)),
        BadRequest(name: "amount past Int64", body: created(replacing: "amount", with: #"{"value":99999999999999999999,"currency":"USD"}"#)),
        BadRequest(name: "amount 1e400", body: created(replacing: "amount", with: #"{"value":1e400,"currency":"USD"}"#)),
        BadRequest(name: "amount as text", body: created(replacing: "amount", with: #"{"value":"499","currency":"USD"}"#)),
        BadRequest(name: "lower-case currency", body: created(replacing: "amount", with: #"{"value":1,"currency":"usd"}"#)),
        BadRequest(name: "four-letter currency", body: created(replacing: "amount", with: #"{"value":1,"currency":"USDT"}"#)),
        BadRequest(name: "missing currency", body: created(replacing: "amount", with: #"{"value":1}"#)),
        BadRequest(name: "unknown provider", body: created(replacing: "provider", with: #""paypal""#)),
        BadRequest(name: "quantity zero", body: created(replacing: "quantity", with: "0")),
        BadRequest(name: "quantity 1001", body: created(replacing: "quantity", with: "1001")),
        BadRequest(name: "unknown data field", body: created(replacing: "color", with: #""red""#)),
        BadRequest(name: "deeply nested JSON", body: event(data: String(repeating: "[", count: 5000) + String(repeating: "]", count: 5000))),
        BadRequest(name: "order id with a space", body: event(data: goodData), orderId: "o%201"),
        BadRequest(name: "order id an SQL injection", body: event(data: goodData), orderId: "o1'%3B%20DROP%20TABLE%20events%3B--"),
        BadRequest(name: "order id 129 characters", body: event(data: goodData), orderId: String(repeating: "o", count: 129)),
        BadRequest(name: "batch with no events", body: #"{"events":[]}"#),
        BadRequest(name: "batch with a repeated eventId", body: {
            let id = UUID().uuidString
            return "{\"events\":[\(event(data: goodData, eventId: "\"\(id)\"")),\(event("payment.queued", data: "{}", eventId: "\"\(id)\""))]}"
        }()),
        // A valid batch, so the only thing wrong is expectedVersion (an empty batch would be refused first).
        BadRequest(name: "expectedVersion negative", body: "{\"expectedVersion\":-1,\"events\":[\(event(data: goodData))]}",
                   field: "expectedVersion"),
        BadRequest(name: "expectedVersion past Int32", body: "{\"expectedVersion\":2147483648,\"events\":[\(event(data: goodData))]}",
                   field: "expectedVersion"),
        // A number no integer of 64 bits holds is refused while the body is read: it cannot be kept exactly.
        BadRequest(name: "expectedVersion past Int64", body: "{\"expectedVersion\":9223372036854775808,\"events\":[\(event(data: goodData))]}",
                   field: "body"),
        BadRequest(name: "expectedVersion negative on one event",
                   body: "{\"eventId\":\"\(UUID().uuidString)\",\"type\":\"order.created\",\"data\":\(goodData),\"expectedVersion\":-1}",
                   field: "expectedVersion"),
        // Four-digit years that leave 0000–9999 once in UTC: stored as text they could never be parsed again.
        BadRequest(name: "purchasedAt in year -1 once in UTC", body: event("receipt.verified", data: """
            {"transactionId":"t-1","productId":"p-1","environment":"production","purchasedAt":"0000-01-01T00:00:00+23:59"}
            """), field: "data.purchasedAt"),
        BadRequest(name: "purchasedAt in year 10000 once in UTC", body: event("receipt.verified", data: """
            {"transactionId":"t-1","productId":"p-1","environment":"production","purchasedAt":"9999-12-31T23:59:59-00:01"}
            """), field: "data.purchasedAt"),
        BadRequest(name: "occurredAt in year -1 once in UTC",
                   body: "{\"eventId\":\"\(UUID().uuidString)\",\"type\":\"order.created\",\"data\":\(goodData),\"occurredAt\":\"0000-01-01T00:00:00+00:01\"}",
                   field: "occurredAt"),
        // Year 0000 (1 BC), where PostgreSQL and Foundation disagree: it was answered 500.
        BadRequest(name: "occurredAt in year 0000",
                   body: "{\"eventId\":\"\(UUID().uuidString)\",\"type\":\"order.created\",\"data\":\(goodData),\"occurredAt\":\"0000-06-01T00:00:00Z\"}",
                   field: "occurredAt"),
        BadRequest(name: "10 MB body", body: "{\"pad\":\"\(String(repeating: "x", count: 10 * 1024 * 1024))\"}",
                   status: .contentTooLarge, code: "payload_too_large"),
        BadRequest(name: "text/plain", body: event(data: goodData), contentType: "text/plain", status: .unsupportedMediaType, code: "unsupported_media_type"),
        // Kept on every event's metadata: a 60 KB one was stored verbatim.
        BadRequest(name: "a 60 KB correlation id", body: event(data: goodData), field: "X-Correlation-Id",
                   headers: [HTTPField.Name("X-Correlation-Id")!: String(repeating: "c", count: 60_000)]),
        BadRequest(name: "a causation id with a space", body: event(data: goodData), field: "X-Causation-Id",
                   headers: [HTTPField.Name("X-Causation-Id")!: "a b"]),
        BadRequest(name: "JSON declared latin1", body: event(data: goodData), contentType: "application/json; charset=latin1",
                   status: .unsupportedMediaType, code: "unsupported_media_type"),
        BadRequest(name: "no content type", body: event(data: goodData), contentType: nil, status: .unsupportedMediaType, code: "unsupported_media_type"),
        BadRequest(name: "no token", body: event(data: goodData), token: nil, status: .unauthorized, code: "unauthorized"),
        BadRequest(name: "garbled token", body: event(data: goodData), token: "olt_\u{7f}garbage", status: .unauthorized, code: "unauthorized"),
        BadRequest(name: "an SQL injection as token", body: event(data: goodData), token: injection, status: .unauthorized, code: "unauthorized"),
        BadRequest(name: "a 10 KB token", body: event(data: goodData), token: String(repeating: "t", count: 10_000), status: .unauthorized, code: "unauthorized"),
        BadRequest(name: "a read-only token", body: event(data: goodData), token: "reader", status: .forbidden, code: "forbidden"),
    ]

    @Test func everyMalformedRequestGetsItsDocumentedCodeAndWritesNothing() async throws {
        #expect(Self.catalog.count >= 40)
        try await API.run { api in
            for bad in Self.catalog {
                let answer = try await api.request(
                    .post, "/v1/orders/\(bad.orderId)/events", token: bad.token, body: bad.body, contentType: bad.contentType,
                    headers: bad.headers)
                #expect(answer.status == bad.status, "\(bad): \(answer.status) \(answer.bodyText.prefix(300))")
                #expect(answer.errorCode == bad.code, "\(bad): \(answer.bodyText.prefix(300))")
                if let field = bad.field {
                    #expect(answer.json["error"]?["details"]?["field"] == .string(field), "\(bad): \(answer.bodyText.prefix(300))")
                }
            }
            for table in ["events", "streams", "orders", "order_transactions"] {
                #expect(try await api.ledger.store.count(table) == 0, "\(table) must stay empty")
            }
        }
    }

    // MARK: Hostile text that reaches SQL

    /// Text built to break a query assembled by concatenation: quotes, a statement terminator, comments, dollar
    /// quoting, a bind placeholder, LIKE wildcards, backslashes, and Unicode that normalisation would change
    /// (a decomposed é next to a precomposed one), a right-to-left override, an emoji, a tab and a newline.
    static let hostile = "o'); DROP TABLE events;-- \\' \" $$ $1 %_ \\x27 E'\\\\' /* */ e\u{301} \u{E9} \u{202E}rtl 🙂\t\n"
    /// The same without control characters, for `code` (printable, at most 64 characters).
    static let hostileCode = "x'); DROP TABLE orders;-- \\ \" $$ %_ e\u{301} \u{E9} \u{202E}"
    /// The id alphabet is `[A-Za-z0-9._:-]`: of the hostile characters only comments (`--`), casts (`::`) and the
    /// LIKE wildcard `_` fit, so the ids use those.
    static let orderId = "o--1::regclass._"

    /// The injections in the catalog are refused by input rules before any SQL runs. These are valid, so they
    /// reach SQL — in event data, in path ids and in query parameters — and must come back byte for byte, with
    /// every table still there.
    @Test func hostileTextInValidFieldsReachesSQLAndComesBackByteForByte() async throws {
        try await API.run { api in
            var lifecycle = Lifecycle()
            lifecycle.accountId = "a--1::text"
            lifecycle.productId = "p_--.:"
            lifecycle.transactionId = "t--1::" + lifecycle.transactionId
            let items: JSONValue = .object([Self.hostile: .string(Self.hostile), "nested": .object(["$$": .string("%_'")])])
            let events: [Submission] = [
                lifecycle.created,
                lifecycle.submission("payment.queued", ["applicationUsername": .string(Self.hostile)]),
                lifecycle.receipt,
                lifecycle.submission("verification.failed", [
                    "code": .string(Self.hostileCode), "retryable": true, "message": .string(Self.hostile),
                ]),
                lifecycle.verified,
                lifecycle.submission("order.granted", [
                    "transactionId": .string(lifecycle.transactionId), "accountId": .string(lifecycle.accountId), "items": items,
                ]),
                lifecycle.submission("order.refunded", ["transactionId": .string(lifecycle.transactionId), "reason": .string(Self.hostile)]),
            ]
            for event in events {
                let answer = try await api.post(Self.orderId, event)
                #expect(answer.status == .created, "\(event.type): \(answer.bodyText.prefix(300))")
            }

            // Through the API: history and the order, compared as bytes (String == would forgive normalisation).
            let history = try await api.get("/v1/orders/\(Self.orderId)/history")
            #expect(history.status == .ok, "\(history.bodyText.prefix(300))")
            let data = history.json["events"]?.elements.map { $0["data"] ?? .null } ?? []
            #expect(data.count == events.count)
            #expect(utf8(data.dropFirst(1).first?["applicationUsername"]) == Array(Self.hostile.utf8))
            #expect(utf8(data.dropFirst(3).first?["message"]) == Array(Self.hostile.utf8))
            #expect(utf8(data.dropFirst(3).first?["code"]) == Array(Self.hostileCode.utf8))
            #expect(utf8(data.dropFirst(5).first?["items"]?[Self.hostile]) == Array(Self.hostile.utf8))
            #expect(data.dropFirst(5).first?["items"] == items)
            #expect(utf8(data.dropFirst(6).first?["reason"]) == Array(Self.hostile.utf8))
            let order = try await api.get("/v1/orders/\(Self.orderId)")
            #expect(order.status == .ok && order.json["state"] == "refunded", "\(order.bodyText.prefix(300))")
            #expect(utf8(order.json["lastErrorCode"]) == Array(Self.hostileCode.utf8))
            #expect(order.json["accountId"] == .string(lifecycle.accountId) && order.json["productId"] == .string(lifecycle.productId))

            // Straight from the tables, as PostgreSQL holds them.
            let client = api.ledger.client
            var stored: [String: [UInt8]] = [:]
            let rows = try await client.query(
                """
                SELECT type, coalesce(data->>'applicationUsername', data->>'message', data->>'reason',
                                      data->'items'->>\(Self.hostile), '')
                FROM events WHERE kind = 'order' AND stream_id = \(Self.orderId) ORDER BY version
                """)
            for try await (type, text) in rows.decode((String, String).self) { stored[type] = Array(text.utf8) }
            for type in ["payment.queued", "verification.failed", "order.granted", "order.refunded"] {
                #expect(stored[type] == Array(Self.hostile.utf8), "\(type) as stored")
            }
            var projected = 0
            for try await (code, account) in try await client.query(
                "SELECT last_error_code, account_id FROM orders WHERE order_id = \(Self.orderId)").decode((String, String).self) {
                #expect(Array(code.utf8) == Array(Self.hostileCode.utf8))
                #expect(account == lifecycle.accountId)
                projected += 1
            }
            #expect(projected == 1)

            // Query parameters and path ids reach SQL as binds: a hostile one matches nothing and breaks nothing.
            let encoded = Self.hostile.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
            let widened = "' OR '1'='1".addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
            let probes: [(uri: String, status: HTTPResponse.Status)] = [
                // An account id or cursor that breaks the id rule could match nothing: refused, naming it.
                ("/v1/orders?accountId=\(encoded)", .badRequest),
                ("/v1/orders?accountId=\(widened)", .badRequest),
                ("/v1/orders?accountId=\(lifecycle.accountId)\(widened)", .badRequest),
                ("/v1/orders?cursor=\(encoded)&accountId=nobody", .badRequest),
                ("/v1/orders?cursor=\(widened)&accountId=nobody", .badRequest),
                ("/v1/orders?cursor=garbage!&accountId=nobody", .badRequest),
                ("/v1/orders?cursor=...", .badRequest),
                // An id in the path that breaks the id rule is refused before any lookup (PathIdAPITests).
                ("/v1/orders/\(encoded)", .badRequest),
                ("/v1/orders/\(encoded)/history", .badRequest),
                ("/v1/transactions/\(encoded)", .badRequest),
                ("/v1/transactions/\(widened)", .badRequest),
                ("/v1/reports/revenue?from=2026-11-01&to=2026-11-30&timezone=\(encoded)", .badRequest),
                ("/v1/reports/revenue?from=2026-11-01&to=2026-11-30&timezone=UTC\(widened)", .badRequest),
            ]
            for (uri, status) in probes {
                let answer = try await api.get(uri)
                #expect(answer.status == status, "\(uri): \(answer.bodyText.prefix(300))")
                if uri.hasPrefix("/v1/orders?") {
                    let field = answer.json["error"]?["details"]?["field"]
                    #expect(field == (uri.contains("cursor=") ? "cursor" : "accountId"), "\(uri): \(answer.bodyText.prefix(300))")
                }
            }
            let exact = try await api.get("/v1/orders?accountId=\(lifecycle.accountId)")
            #expect(exact.json["orders"]?.elements.map { $0["orderId"] } == [.string(Self.orderId)])
            let pastLastCursor = try await api.get("/v1/orders?cursor=\(Self.orderId)&limit=500")
            #expect(pastLastCursor.status == .ok, "\(pastLastCursor.bodyText.prefix(300))")

            // Every table is still there, holding what was written.
            for table in ["events", "streams", "orders", "order_transactions", "refusals", "api_tokens", "ledger_digests"] {
                var exists = false
                for try await found in try await client.query("SELECT to_regclass(\(table)) IS NOT NULL").decode(Bool.self) {
                    exists = found
                }
                #expect(exists, "\(table) still exists")
            }
            #expect(try await api.ledger.store.count("events") == events.count)
            #expect(try await api.ledger.store.count("orders") == 1)
        }
    }
}

/// A JSON string's UTF-8 bytes; nil for anything else.
private func utf8(_ value: JSONValue?) -> [UInt8]? {
    if case .string(let text)? = value { Array(text.utf8) } else { nil }
}
