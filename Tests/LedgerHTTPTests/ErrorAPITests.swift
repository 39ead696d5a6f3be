import Foundation
import HTTPTypes
import Hummingbird
import LedgerCore
import LedgerHTTP
@testable import LedgerPostgres
import LedgerTestSupport
import Testing

@Suite("HTTP: every error code, from a request that causes it")
struct ErrorAPITests {
    /// Posts `events` to a fresh order and returns the answer to the last one.
    static func lastAnswer(_ api: API, _ orderId: String, _ events: [Submission]) async throws -> API.Answer {
        var answer: API.Answer?
        for event in events { answer = try await api.post(orderId, event) }
        return answer!
    }

    @Test func malformedRequestsAreRefusedNamingTheField() async throws {
        try await API.run { api in
            let broken = try await api.request(.post, "/v1/orders/o1/events", body: "{\"eventId\": ")
            #expect(broken.status == .badRequest && broken.errorCode == "invalid_request")
            #expect(broken.json["error"]?["details"]?["field"] == "body")

            let missingId = try await api.post("o1", ["type": "order.created", "data": [:]])
            #expect(missingId.errorCode == "invalid_request")
            #expect(missingId.json["error"]?["details"]?["field"] == "eventId")

            var created = Lifecycle().created.json
            if case .object(var members) = created {
                members["data"] = ["accountId": 7, "productId": "p", "provider": "app_store", "amount": ["value": 1, "currency": "USD"]]
                created = .object(members)
            }
            let mistyped = try await api.post("o1", created)
            #expect(mistyped.errorCode == "invalid_request")
            #expect(mistyped.json["error"]?["details"]?["field"] == "data.accountId")

            let unknownField = try await api.post("o1", ["eventId": .string(UUID().uuidString), "type": "order.finished", "extra": 1])
            #expect(unknownField.json["error"]?["details"]?["field"] == "extra")

            let badOrderId = try await api.post("o%20with%20spaces", Lifecycle().created)
            #expect(badOrderId.errorCode == "invalid_request")
            #expect(try await api.ledger.store.count("events") == 0)
        }
    }

    @Test func transportErrorsHaveTheirOwnCodes() async throws {
        try await API.run { api in
            let wrongType = try await api.request(.post, "/v1/orders/o1/events", body: Lifecycle().created.json.canonicalJSON, contentType: "text/plain")
            #expect(wrongType.status == .unsupportedMediaType && wrongType.errorCode == "unsupported_media_type")

            let huge = String(repeating: "x", count: 300 * 1024)
            let tooLarge = try await api.request(.post, "/v1/orders/o1/events", body: "{\"pad\": \"\(huge)\"}")
            #expect(tooLarge.status == .contentTooLarge && tooLarge.errorCode == "payload_too_large")

            let unknownType = try await api.post("o1", Lifecycle().submission("order.teleported", [:]))
            #expect(unknownType.status == .unprocessableContent && unknownType.errorCode == "unknown_event_type")

            let noRoute = try await api.get("/v1/nowhere")
            #expect(noRoute.status == .notFound && noRoute.errorCode == "not_found")
            let noOrder = try await api.get("/v1/orders/never-seen")
            #expect(noOrder.status == .notFound && noOrder.errorCode == "not_found")
            #expect(try await api.ledger.store.count("events") == 0)
        }
    }

    @Test func everyRefusalOfTheDomainIsA409WithItsCode() async throws {
        try await API.run { api in
            let l = Lifecycle()
            var checks: [(String, API.Answer)] = []
            checks.append(("order_exists", try await Self.lastAnswer(api, "a", [l.created, l.created])))
            checks.append(("invalid_transition", try await Self.lastAnswer(api, "b", [l.created, l.granted()])))
            checks.append(("version_conflict", try await api.post("c", ["eventId": .string(UUID().uuidString), "type": "order.created",
                                                                        "data": l.created.data, "expectedVersion": 3])))
            let reused = l.created
            _ = try await api.post("d", reused)
            var changed = reused
            changed.data = Lifecycle().cancelled.data
            changed.type = "order.cancelled"
            checks.append(("idempotency_conflict", try await api.post("d", changed)))

            var other = Lifecycle()
            other.transactionId = l.transactionId
            _ = try await Self.lastAnswer(api, "e1", [l.created, l.receipt])
            checks.append(("transaction_bound_elsewhere", try await Self.lastAnswer(api, "e2", [other.created, other.receipt])))

            var mismatched = Lifecycle()
            checks.append(("transaction_mismatch", try await Self.lastAnswer(api, "f", [mismatched.created, mismatched.receipt,
                mismatched.submission("receipt.verified", ["transactionId": "tx-other", "productId": .string(mismatched.productId),
                                                           "environment": "production", "purchasedAt": "2026-11-22T10:00:00Z"])])))
            mismatched = Lifecycle()
            checks.append(("product_mismatch", try await Self.lastAnswer(api, "g", [mismatched.created, mismatched.receipt,
                mismatched.submission("receipt.verified", ["transactionId": .string(mismatched.transactionId), "productId": "gems.9999",
                                                           "environment": "production", "purchasedAt": "2026-11-22T10:00:00Z"])])))
            mismatched = Lifecycle()
            checks.append(("environment_mismatch", try await Self.lastAnswer(api, "h", [mismatched.created, mismatched.receipt,
                mismatched.submission("receipt.verified", ["transactionId": .string(mismatched.transactionId),
                                                           "productId": .string(mismatched.productId), "environment": "sandbox",
                                                           "purchasedAt": "2026-11-22T10:00:00Z"])])))
            let wrongAccount = Lifecycle()
            checks.append(("account_mismatch", try await Self.lastAnswer(api, "i", [wrongAccount.created, wrongAccount.receipt,
                                                                                  wrongAccount.verified, wrongAccount.granted(to: "acct-intruder")])))
            let twice = Lifecycle()
            checks.append(("already_granted", try await Self.lastAnswer(api, "j", [twice.created, twice.receipt, twice.verified,
                                                                                 twice.granted(), twice.granted()])))
            for (code, answer) in checks {
                #expect(answer.status == .conflict, "\(code): \(answer.bodyText)")
                #expect(answer.errorCode == code, "\(code): \(answer.bodyText)")
            }
            let invalid = checks[1].1.json["error"]?["details"]
            #expect(invalid?["state"] == "created")
            #expect(invalid?["allowed"] == ["payment.queued", "receipt.received", "order.cancelled"])
            let conflict = checks[2].1.json["error"]?["details"]
            #expect(conflict?["expected"] == 3 && conflict?["actual"] == 0)
        }
    }

    @Test func everyProtectedRouteAnswers401WithoutATokenAnd403WithoutItsScope() async throws {
        try await API.run { api in
            let router = LedgerApplication.router(database: api.database)
            // The providers' endpoints are authenticated by the providers' signatures instead (ProviderAPITests).
            let protected = router.routes.filter {
                $0.path.description.hasPrefix("/v1") && !$0.path.description.hasPrefix("/v1/providers")
            }
            #expect(protected.count >= 6)
            for route in protected {
                let uri = route.path.description
                    .replacingOccurrences(of: "{orderId}", with: "o1").replacingOccurrences(of: "{transactionId}", with: "t1")
                let body = route.method == .post ? "{}" : nil
                let anonymous = try await api.request(route.method, uri, token: nil, body: body)
                #expect(anonymous.status == .unauthorized && anonymous.errorCode == "unauthorized", "\(route)")
                let garbled = try await api.request(route.method, uri, token: "olt_not-a-real-token", body: body)
                #expect(garbled.status == .unauthorized, "\(route)")
                let isFinance = ["/v1/reports", "/v1/reconciliations", "/v1/anomalies"].contains { uri.hasPrefix($0) }
                let wrongScope = try await api.request(route.method, uri, token: isFinance ? "all-but-finance" : "finance", body: body)
                #expect(wrongScope.status == .forbidden && wrongScope.errorCode == "forbidden", "\(route)")
            }
            #expect(try await api.get("/v1/orders/o1", token: "writer").status == .forbidden)
            #expect(try await api.post("o1", Lifecycle().created, token: "reader").status == .forbidden)
        }
    }

    /// Text a comparison would spend seconds on (more than 30 combining marks in a row, `StreamSafeText`) is refused
    /// with 400 naming where it came in, in a header or in the body, before any route reads it; 30 are text like any
    /// other.
    @Test func textWithLongRunsOfCombiningMarksIsRefusedWhereverItComesIn() async throws {
        try await API.run { api in
            let run = { (marks: Int) in "e" + String(repeating: "\u{0301}", count: marks) }
            let note = try #require(HTTPField.Name("X-Note"))
            let header = try await api.request(.get, "/v1/orders?limit=1", token: "reader", headers: [note: run(31)])
            #expect(header.status == .badRequest && header.errorCode == "invalid_request")
            #expect(header.json["error"]?["details"]?["field"] == "X-Note")
            let fine = try await api.request(.get, "/v1/orders?limit=1", token: "reader", headers: [note: run(30)])
            #expect(fine.status == .ok)
            // Before the router matches anything, and in the query however it is encoded.
            let noRoute = try await api.request(.get, "/v1/nowhere", token: nil, headers: [note: run(31)])
            #expect(noRoute.status == .badRequest && noRoute.json["error"]?["details"]?["field"] == "X-Note")
            let encoded = "e" + String(repeating: "%CC%81", count: 31)
            let query = try await api.request(.get, "/v1/orders?\(encoded)=1&limit=1", token: "reader")
            #expect(query.status == .badRequest && query.json["error"]?["details"]?["field"] == "path")
            let fineQuery = try await api.request(.get, "/v1/orders?note=e\(String(repeating: "%CC%81", count: 30))&limit=1", token: "reader")
            #expect(fineQuery.status != .badRequest || fineQuery.json["error"]?["details"]?["field"] != "path")

            let body = { (marks: Int) in
                #"{"eventId": "\#(UUID().uuidString)", "type": "order.created", "data": {"accountId": "\#(run(marks))"}}"#
            }
            let refused = try await api.request(.post, "/v1/orders/o1/events", body: body(31))
            #expect(refused.status == .badRequest && refused.json["error"]?["details"]?["field"] == "body")
            let parsed = try await api.request(.post, "/v1/orders/o1/events", body: body(30))
            #expect(parsed.json["error"]?["details"]?["field"] == "data.accountId")
            #expect(try await api.ledger.store.count("events") == 0)
        }
    }

    /// Spaces and tabs around the secret are HTTP's optional whitespace, not part of it; anything else is.
    @Test func theBearerSecretIsReadWithoutTheWhitespaceAroundIt() async throws {
        try await API.run { api in
            let secret = try #require(api.secrets["reader"])
            for header in ["Bearer \(secret)", "Bearer  \t\(secret) \t", "bearer \(secret)"] {
                let answer = try await api.request(.get, "/v1/orders?limit=1", token: nil, headers: [.authorization: header])
                #expect(answer.status == .ok, "\(header.debugDescription): \(answer.status)")
            }
            for header in ["Bearer x\(secret)", "Bearer \(secret).", "Bearer \u{00A0}\(secret)"] {
                let answer = try await api.request(.get, "/v1/orders?limit=1", token: nil, headers: [.authorization: header])
                #expect(answer.status == .unauthorized, "\(header.debugDescription): \(answer.status)")
            }
        }
    }

    @Test func aRevokedTokenIsLockedOutOnItsNextRequest() async throws {
        try await API.run { api in
            #expect(try await api.get("/v1/orders?limit=1", token: "reader").status == .ok)
            try await api.tokens.revoke(name: "reader")
            #expect(try await api.get("/v1/orders?limit=1", token: "reader").status == .unauthorized)
        }
    }
}
