import Foundation
import HTTPTypes
import LedgerCore
@testable import LedgerPostgres
import LedgerTestSupport
import Testing

/// `/v1/webhooks` (scope `webhooks:manage`): endpoints managed over the API; a secret in the answer that made it and
/// in no other; every bad input a 4xx naming its field, changing nothing.
@Suite("HTTP: webhook endpoints")
struct WebhookAPITests {
    static let endpoint = #"{"name":"backend","url":"https://hooks.example.com/ledger","events":["order.*","subscription.renewed"]}"#

    @Test func anEndpointIsAddedListedRotatedDisabledEnabledAndRemoved() async throws {
        try await API.run { api in
            let added = try await api.request(.post, "/v1/webhooks", body: Self.endpoint)
            #expect(added.status == .created, "\(added.bodyText)")
            guard case .string(let secret)? = added.json["secret"] else { Issue.record("no secret: \(added.bodyText)"); return }
            #expect(WebhookSecret(secret) != nil)
            #expect(added.json["events"] == .array(["order.*", "subscription.renewed"]) && added.json["health"] == "active")

            let listed = try await api.get("/v1/webhooks")
            guard case .array(let all)? = listed.json["webhooks"] else { Issue.record("\(listed.bodyText)"); return }
            #expect(listed.status == .ok && all.first?["name"] == "backend")
            let one = try await api.get("/v1/webhooks/backend")
            for answer in [listed, one] {
                #expect(!answer.bodyText.contains(secret.dropFirst(6)), "no secret after creation")
            }

            let rotated = try await api.request(.post, "/v1/webhooks/backend/rotate-secret", body: #"{"overlapSeconds":60}"#)
            #expect(rotated.status == .ok, "\(rotated.bodyText)")
            #expect(rotated.json["secret"] != .string(secret) && rotated.json["previousSecretValidUntil"] != .null)

            let disabled = try await api.request(.post, "/v1/webhooks/backend/disable", body: nil, contentType: nil)
            #expect(disabled.status == .ok && disabled.json["health"] == "disabled", "\(disabled.bodyText)")
            #expect(disabled.json["disabledReason"] == "disabled by all")
            let enabled = try await api.request(.post, "/v1/webhooks/backend/enable", body: nil, contentType: nil)
            #expect(enabled.json["health"] == "active")

            let deliveries = try await api.get("/v1/webhooks/backend/deliveries?state=pending&limit=10")
            #expect(deliveries.status == .ok && deliveries.json["deliveries"] == .array([]), "\(deliveries.bodyText)")
            #expect(try await api.request(.delete, "/v1/webhooks/backend", body: nil, contentType: nil).status == .noContent)
            #expect(try await api.get("/v1/webhooks/backend").status == .notFound)
        }
    }

    @Test func onlyTheWebhooksScopeManagesEndpoints() async throws {
        try await API.run { api in
            for token in ["writer", "reader", "finance"] {
                let add = try await api.request(.post, "/v1/webhooks", token: token, body: Self.endpoint)
                #expect(add.status == .forbidden)
                #expect(try await api.get("/v1/webhooks", token: token).status == .forbidden)
            }
            let anonymous = try await api.get("/v1/webhooks", token: nil)
            #expect(anonymous.status == .unauthorized)
            #expect(try await api.database.webhooks.list(now: Date()).isEmpty)
        }
    }

    @Test func badInputIsRefusedNamingItsFieldAndChangesNothing() async throws {
        try await API.run { api in
            let cases: [(body: String, field: String)] = [
                (#"{"name":"Backend","url":"https://a.example/","events":["*"]}"#, "name"),
                (#"{"name":"b","url":"ftp://a.example/","events":["*"]}"#, "url"),
                (#"{"name":"b","url":"https://user:pw@a.example/","events":["*"]}"#, "url"),
                (#"{"name":"b","url":"https://a.example/","events":[]}"#, "events"),
                (#"{"name":"b","url":"https://a.example/","events":["refunds"]}"#, "events"),
                (#"{"name":"b","url":"https://a.example/","events":[7]}"#, "events"),
                (#"{"name":"b","url":"https://a.example/","events":["*"],"secret":"whsec_x"}"#, "secret"),
                (#"["b"]"#, "body"),
            ]
            for (body, field) in cases {
                let answer = try await api.request(.post, "/v1/webhooks", body: body)
                #expect(answer.status == .badRequest, "\(body): \(answer.bodyText)")
                #expect(answer.json["error"]?["details"]?["field"] == .string(field), "\(body): \(answer.bodyText)")
            }
            #expect(try await api.database.webhooks.list(now: Date()).isEmpty)

            #expect(try await api.request(.post, "/v1/webhooks", body: Self.endpoint).status == .created)
            let again = try await api.request(.post, "/v1/webhooks", body: Self.endpoint)
            #expect(again.status == .conflict && again.errorCode == "name_taken")
            #expect(try await api.get("/v1/webhooks/backend/deliveries?state=lost").json["error"]?["details"]?["field"] == "state")
            #expect(try await api.get("/v1/webhooks/backend/deliveries?limit=0").json["error"]?["details"]?["field"] == "limit")
            #expect(try await api.get("/v1/webhooks/nobody/deliveries").status == .notFound)
            for (body, field) in [
                (#"{"eventId":"nope"}"#, "eventId"), (#"{"fromPosition":5,"toPosition":2}"#, "body"),
                (#"{"from":"2026-11-02T00:00:00Z","to":"2026-11-01T00:00:00Z"}"#, "to"), ("{}", "body"),
            ] {
                let answer = try await api.request(.post, "/v1/webhooks/backend/replay", body: body)
                #expect(answer.status == .badRequest && answer.json["error"]?["details"]?["field"] == .string(field), "\(body): \(answer.bodyText)")
            }
            let rotate = try await api.request(.post, "/v1/webhooks/backend/rotate-secret", body: #"{"overlapSeconds":-1}"#)
            #expect(rotate.json["error"]?["details"]?["field"] == "overlapSeconds")
            #expect(try await api.request(.post, "/v1/webhooks/nobody/replay", body: #"{"fromPosition":1,"toPosition":2}"#).status == .notFound)
        }
    }

    @Test func aReplayQueuesTheSelectedEventsOfTheRange() async throws {
        try await API.run { api in
            #expect(try await api.request(.post, "/v1/webhooks", body: Self.endpoint).status == .created)
            let lifecycle = Lifecycle()
            for event in lifecycle.happyPath { #expect(try await api.post("replayed", event).status == .created) }
            let replay = try await api.request(.post, "/v1/webhooks/backend/replay", body: #"{"fromPosition":1,"toPosition":3}"#)
            #expect(replay.status == .accepted && replay.json["queued"] == .int(3), "\(replay.bodyText)")
            let listed = try await api.get("/v1/webhooks/backend/deliveries")
            guard case .array(let deliveries)? = listed.json["deliveries"] else { Issue.record("\(listed.bodyText)"); return }
            #expect(deliveries.compactMap { $0["position"] } == [3, 2, 1])
            #expect(deliveries.allSatisfy { $0["state"] == "pending" && $0["streamId"] == "replayed" })
        }
    }
}
