import Foundation
import Hummingbird
import LedgerCore
import LedgerHTTP
import LedgerPostgres
import LedgerTestSupport
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
        BadRequest(name: "expectedVersion negative", body: #"{"expectedVersion":-1,"events":[]}"#),
        BadRequest(name: "10 MB body", body: "{\"pad\":\"\(String(repeating: "x", count: 10 * 1024 * 1024))\"}",
                   status: .contentTooLarge, code: "payload_too_large"),
        BadRequest(name: "text/plain", body: event(data: goodData), contentType: "text/plain", status: .unsupportedMediaType, code: "unsupported_media_type"),
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
                    .post, "/v1/orders/\(bad.orderId)/events", token: bad.token, body: bad.body, contentType: bad.contentType)
                #expect(answer.status == bad.status, "\(bad): \(answer.status) \(answer.bodyText.prefix(300))")
                #expect(answer.errorCode == bad.code, "\(bad): \(answer.bodyText.prefix(300))")
            }
            for table in ["events", "streams", "orders", "order_transactions"] {
                #expect(try await api.ledger.store.count(table) == 0, "\(table) must stay empty")
            }
        }
    }
}
