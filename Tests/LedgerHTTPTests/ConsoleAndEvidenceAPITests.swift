import Foundation
import LedgerCore
import LedgerHTTP
@testable import LedgerPostgres
import LedgerTestSupport
import PostgresNIO
import Testing

/// What the console reads beside an order's history (its chain and its refusals), and the console's own files.
@Suite("HTTP: an order's chain and refusals, and the console's files")
struct ConsoleAndEvidenceAPITests {
    @Test func theChainVerifiesEachEventAndNamesTheFirstAlteredOne() async throws {
        try await API.run { api in
            for event in Lifecycle().happyPath { _ = try await api.post("order-1", event, token: "writer") }
            let intact = try await api.get("/v1/orders/order-1/chain", token: "reader")
            #expect(intact.status == .ok)
            #expect(intact.json["verified"] == .bool(true))
            #expect(intact.json["events"]?.elements.map { $0["verifiedUpToHere"] } == Array(repeating: .bool(true), count: 6))
            #expect(intact.json["events"]?.elements.allSatisfy { $0["problem"] == .null && Self.isHexHash($0["hash"]) } == true)

            try await tamper(api.tokens.client, ["UPDATE events SET data = '{}' WHERE stream_id = 'order-1' AND version = 3"])
            let altered = try await api.get("/v1/orders/order-1/chain", token: "reader")
            #expect(altered.json["verified"] == .bool(false))
            let upToHere = altered.json["events"]?.elements.map { $0["verifiedUpToHere"] == .bool(true) }
            #expect(upToHere == [true, true, false, false, false, false])
            try #require(upToHere?.count == 6)
            #expect(altered.json["events"]?.elements[2]["problem"] != .null)
            #expect(altered.json["events"]?.elements[3]["problem"] == .null, "event 4's own seal still holds")

            let unknown = try await api.get("/v1/orders/order-never/chain", token: "reader")
            #expect(unknown.status == .notFound && unknown.errorCode == "not_found")
            #expect(try await api.get("/v1/orders/order-1/chain", token: "finance").status == .forbidden)
            #expect(try await api.get("/v1/orders/order-1/chain?limit=1", token: "reader").errorCode == "invalid_request")
        }
    }

    @Test func refusalsForAnOrderAreListedNewestFirst() async throws {
        try await API.run { api in
            var order = Lifecycle()
            order.accountId = "acct-alice"
            for event in [order.created, order.queued, order.receipt, order.verified] {
                _ = try await api.post("order-1", event, token: "writer")
            }
            #expect(try await api.post("order-1", order.granted(to: "acct-mallory"), token: "writer").status == .conflict)
            #expect(try await api.post("order-1", order.created, token: "writer").status == .conflict, "created twice")

            let answer = try await api.get("/v1/orders/order-1/refusals", token: "reader")
            #expect(answer.status == .ok)
            let refusals = try #require(answer.json["refusals"]?.elements)
            #expect(refusals.map { $0["eventType"] } == [.string("order.created"), .string("order.granted")])
            #expect(refusals.last?["code"] == .string("account_mismatch"))
            #expect(refusals.last?["actor"] == .string("writer"))

            let none = try await api.get("/v1/orders/order-never/refusals", token: "reader")
            #expect(none.status == .ok && none.json["refusals"] == .array([]))
            #expect(try await api.get("/v1/orders/order-1/refusals", token: nil).status == .unauthorized)
        }
    }

    @Test func theConsoleIsServedWithoutATokenUnderAStrictContentSecurityPolicy() async throws {
        try await API.run { api in
            let page = try await api.get("/console/", token: nil)
            #expect(page.status == .ok)
            #expect(page.headers[.contentType]?.hasPrefix("text/html") == true)
            let policy = try #require(page.headers[.contentSecurityPolicy])
            #expect(policy.contains("script-src 'self'") && policy.contains("default-src 'none'") && !policy.contains("unsafe"))
            #expect(page.headers[.init("X-Content-Type-Options")!] == "nosniff")
            // No inline script: every <script> names its file.
            let scripts = page.bodyText.components(separatedBy: "<script").dropFirst()
            #expect(!scripts.isEmpty && scripts.allSatisfy { $0.hasPrefix(" src=") })
            #expect(!page.bodyText.contains("http://") && !page.bodyText.contains("https://"), "nothing from another origin")

            let script = try await api.get("/console/console.js", token: nil)
            #expect(script.status == .ok && script.headers[.contentType]?.hasPrefix("text/javascript") == true)
            #expect(!script.bodyText.contains(".innerHTML =") && !script.bodyText.contains("insertAdjacentHTML"), "values are written as text, never parsed as markup")
            for missing in ["/console/nothing.js", "/console/..%2FPackage.swift"] {
                #expect(try await api.get(missing, token: nil).status == .notFound, "\(missing)")
            }
        }
    }

    static func isHexHash(_ value: JSONValue?) -> Bool {
        guard case .string(let hex)? = value else { return false }
        return hex.count == 64 && hex.allSatisfy(\.isHexDigit)
    }
}
