import Foundation
import Hummingbird
import LedgerCore
import LedgerHTTP
@testable import LedgerPostgres
import LedgerTestSupport
import Testing

@Suite("HTTP: the feed, operations and the OpenAPI document")
struct FeedAndDocumentTests {
    @Test func pagingTheFeedWhileWritersRunCollectsEveryEventExactlyOnce() async throws {
        try await API.run { api in
            let writing = Task {
                try await withThrowingTaskGroup(of: Int.self) { group in
                    for writer in 0..<6 {
                        group.addTask {
                            for event in Lifecycle().happyPath {
                                let answer = try await api.post("order-\(writer)", event, token: "writer")
                                guard answer.status == .created else { throw APIError.invalidRequest(field: "-", answer.bodyText) }
                            }
                            return 6
                        }
                    }
                    return try await group.reduce(0, +)
                }
            }
            var seen: [JSONValue] = []
            var after = "0"
            func drain() async throws {
                while true {
                    let page = try await api.get("/v1/events?after=\(after)&limit=4", token: "reader")
                    guard page.status == .ok, case .array(let events)? = page.json["events"], !events.isEmpty else { return }
                    seen += events.compactMap { $0["eventId"] }
                    if case .int(let next)? = page.json["next"] { after = String(next) }
                }
            }
            let deadline = ContinuousClock.now + .seconds(120)
            while ContinuousClock.now < deadline {
                try await drain()
                if try await api.ledger.store.count("events") == 36 { break }
                try await Task.sleep(for: .milliseconds(5))
            }
            #expect(try await writing.value == 36)
            // The feed reads below the cluster's oldest open transaction; other tests share the cluster.
            while seen.count < 36, ContinuousClock.now < deadline {
                try await drain()
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(seen.count == 36)
            #expect(Set(seen).count == 36)
        }
    }

    @Test func theLedgerDigestIsServedOnceSealed() async throws {
        try await API.run { api in
            let none = try await api.get("/v1/ledger/digest", token: "reader")
            #expect(none.status == .notFound && none.errorCode == "not_found")
            for event in Lifecycle().happyPath { _ = try await api.post("order-1", event, token: "writer") }
            let sealed = try #require(try await sealUntil(6, api.ledger.client))
            let answer = try await api.get("/v1/ledger/digest", token: "reader")
            #expect(answer.status == .ok)
            #expect(answer.json["pinned"] == .string(sealed.pinned))
            #expect(answer.json["eventCount"] == .int(6))
            #expect(answer.json["position"] == .int(sealed.position))
        }
    }

    @Test func healthReadinessMetricsAndTheDocumentNeedNoToken() async throws {
        // Ready means the database answered within the readiness timeout: 2 s by default, which on a machine busy with
        // the whole suite and two busy cores `SELECT 1` missed for a minute on end. Here it has two minutes: that the
        // service says it is not ready when the database does not answer is `ServerLimitsAPITests`' to show.
        try await API.run(readinessTimeout: .seconds(120)) { api in
            _ = try await api.post("order-1", Lifecycle().created)
            #expect(try await api.get("/healthz", token: nil).status == .ok)
            let ready = try await api.get("/readyz", token: nil)
            #expect(ready.json == ["status": "ready", "replication": "single_copy"], "\(ready.status) \(ready.bodyText)")
            let metrics = try await api.get("/metrics", token: nil)
            #expect(metrics.status == .ok)
            #expect(metrics.bodyText.contains("ledger_events_appended_total"))
            _ = try await api.post("order-1", ["eventId": "not-a-uuid", "type": "order.finished"])
            let counted = try await api.get("/metrics", token: nil).bodyText
            #expect(counted.contains("ledger_refusals_total"))
            // Requests by route, method and status, and their durations.
            #expect(counted.contains(#"hb_requests{http_route="/v1/orders/{orderId}/events",http_request_method="POST",http_response_status_code="400"}"#), "\(counted)")
            #expect(counted.contains(#"http_server_request_duration_count{http_route="/healthz",http_request_method="GET",http_response_status_code="200"}"#))
            let document = try await api.get("/openapi.yaml", token: nil)
            #expect(document.status == .ok && document.bodyText.hasPrefix("openapi: 3.1"))
        }
    }

    /// The document is kept true: every route the router has, and every error code the API answers with, is in it.
    @Test func theOpenAPIDocumentListsEveryRouteAndErrorCode() async throws {
        try await API.run { api in
            let document = try await api.get("/openapi.yaml", token: nil).bodyText
            let router = LedgerApplication.router(database: api.database)
            for route in router.routes {
                let path = route.path.description
                let methods = Self.methods(of: path, in: document)
                #expect(methods.contains("\(route.method)".lowercased()), "\(route.method) \(path) is missing from openapi.yaml")
            }
            for code in APIError.allCodes {
                #expect(document.contains(code), "error code \(code) is missing from openapi.yaml")
            }
        }
    }

    /// The operations the document lists under `path` (its four-space-indented keys).
    static func methods(of path: String, in document: String) -> Set<String> {
        let lines = document.split(separator: "\n", omittingEmptySubsequences: false)
        guard let start = lines.firstIndex(of: "  \(path):") else { return [] }
        var methods = Set<String>()
        for line in lines[(start + 1)...] {
            if line.hasPrefix("  ") && !line.hasPrefix("   ") { break }
            if line.hasPrefix("    ") && !line.hasPrefix("     "), line.hasSuffix(":") {
                methods.insert(String(line.dropFirst(4).dropLast()))
            }
        }
        return methods
    }
}
