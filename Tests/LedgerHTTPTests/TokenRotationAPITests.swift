import Foundation
import HTTPTypes
import LedgerCore
@testable import LedgerPostgres
import LedgerTestSupport
import PostgresNIO
import Testing

/// Rotating a token (`POST /v1/tokens/{name}/rotate`, `ledger tokens rotate`): a new secret under the same name and
/// scopes, so the actor on its events stays the same; the replaced secret is accepted for the overlap, then refused.
@Suite("HTTP: rotating a token's secret")
struct TokenRotationAPITests {
    func rotate(_ api: API, _ name: String, overlap: Int?, token: String = "all") async throws -> API.Answer {
        try await api.request(.post, "/v1/tokens/\(name)/rotate", token: token,
                              body: overlap.map { JSONValue.object(["overlapSeconds": .int(Int64($0))]).canonicalJSON })
    }

    @Test func theNewSecretWritesAsTheSameActorAndTheOldOneLastsTheOverlap() async throws {
        try await API.run { api in
            let lifecycle = Lifecycle()
            // The old secret is cached by its first request: rotation must reach the cache too.
            #expect(try await api.post("rot-1", lifecycle.created, token: "writer").status == .created)
            let answer = try await rotate(api, "writer", overlap: 3_600)
            #expect(answer.status == .ok, "\(answer.bodyText)")
            guard case .string(let secret)? = answer.json["secret"] else { Issue.record("no secret: \(answer.bodyText)"); return }
            #expect(secret != api.secrets["writer"])
            #expect(answer.json["name"] == "writer")
            #expect(answer.json["previousValidUntil"] != nil && answer.json["previousValidUntil"] != .null)

            #expect(try await api.post("rot-1", lifecycle.queued, token: secret).status == .created)
            #expect(try await api.post("rot-1", lifecycle.receipt, token: "writer").status == .created,
                    "the replaced secret is still accepted within the overlap")
            let history = try await api.get("/v1/orders/rot-1/history")
            guard case .array(let events)? = history.json["events"] else { Issue.record("no events: \(history.bodyText)"); return }
            let actors = events.compactMap { $0["actor"] }
            #expect(actors == ["writer", "writer", "writer"], "\(history.bodyText)")
        }
    }

    @Test func withNoOverlapTheReplacedSecretIsRefusedAtOnceEvenFromTheCache() async throws {
        try await API.run { api in
            let lifecycle = Lifecycle()
            #expect(try await api.post("rot-2", lifecycle.created, token: "writer").status == .created)
            let answer = try await rotate(api, "writer", overlap: 0)
            #expect(answer.status == .ok, "\(answer.bodyText)")
            let refused = try await api.post("rot-2", lifecycle.queued, token: "writer")
            #expect(refused.status == .unauthorized, "\(refused.bodyText)")
            #expect(try await api.ledger.store.count("events") == 1)
        }
    }

    @Test func rotationNeedsTheAdminScopeAnActiveTokenAndAnOverlapItCanKeep() async throws {
        try await API.run { api in
            #expect(try await rotate(api, "writer", overlap: 10, token: "all-but-finance").status == .forbidden)
            let unknown = try await rotate(api, "nobody", overlap: 10)
            #expect(unknown.status == .notFound, "\(unknown.bodyText)")
            for bad in [-1, TokenError.maximumOverlapSeconds + 1] {
                let answer = try await rotate(api, "writer", overlap: bad)
                #expect(answer.status == .badRequest, "\(answer.bodyText)")
                #expect(answer.json["error"]?["details"]?["field"] == "overlapSeconds")
            }
            let unknownField = try await api.request(.post, "/v1/tokens/writer/rotate", body: #"{"overlap": 5}"#)
            #expect(unknownField.json["error"]?["details"]?["field"] == "overlap", "\(unknownField.bodyText)")
            // A revoked token cannot be brought back by rotating it.
            try await api.tokens.revoke(name: "reader")
            #expect(try await rotate(api, "reader", overlap: 10).status == .notFound)
            // Without a body: the default overlap.
            #expect(try await api.request(.post, "/v1/tokens/finance/rotate", body: nil).status == .ok)
        }
    }

    /// A token revoked after its request was admitted from the cache rotates nothing: the rotation authenticates its
    /// caller again in its own transaction. Before, it was answered 401 after the other token's secret was replaced,
    /// and that service was locked out.
    @Test func aRevokedAdminTokenRotatesNothing() async throws {
        try await API.run { api in
            let admin = try await api.tokens.create(name: "ops", scopes: [.tokensAdmin, .eventsWrite])
            #expect(try await api.post("rot-4", Lifecycle().created, token: admin).status == .created, "cached now")
            try await api.tokens.revoke(name: "ops")
            let refused = try await rotate(api, "writer", overlap: 0, token: admin)
            #expect(refused.status == .unauthorized, "\(refused.bodyText)")
            #expect(try await api.post("rot-5", Lifecycle().created, token: "writer").status == .created,
                    "the writer's secret was not replaced")
        }
    }

    /// A leaked admin secret, rotated by the operator, is evicted: during the overlap it still does its token's
    /// ordinary work, but it cannot rotate again (with overlap 0 it had locked the operator's new secret out).
    @Test func aReplacedSecretCannotRotate() async throws {
        try await API.run { api in
            let leaked = try await api.tokens.create(name: "ops", scopes: [.tokensAdmin, .eventsRead])
            let fresh = try await rotate(api, "ops", overlap: 3_600)
            guard case .string(let operators)? = fresh.json["secret"] else { Issue.record("\(fresh.bodyText)"); return }
            #expect(try await api.get("/v1/events", token: leaked).status == .ok, "ordinary work within the overlap")
            let again = try await rotate(api, "ops", overlap: 0, token: leaked)
            #expect(again.status == .forbidden, "\(again.bodyText)")
            #expect(try await api.get("/v1/events", token: operators).status == .ok, "the operator's secret still works")
            #expect(try await rotate(api, "ops", overlap: 0, token: operators).status == .ok, "and may rotate")
        }
    }

    /// Rotating hands the new secret to the caller, so a token may rotate only tokens whose scopes are within its own:
    /// an admin-only token obtained an all-scopes token's secret and wrote events and read finance with it.
    @Test func aTokenRotatesOnlyTokensWithinItsScopes() async throws {
        try await API.run { api in
            let adminOnly = try await api.tokens.create(name: "ops", scopes: [.tokensAdmin])
            for wider in ["all", "writer"] {
                let refused = try await rotate(api, wider, overlap: 0, token: adminOnly)
                #expect(refused.status == .forbidden, "\(wider): \(refused.bodyText)")
                #expect(refused.json["secret"] == nil)
            }
            #expect(try await api.get("/v1/events", token: "all").status == .ok, "the all-scopes secret was not replaced")
            #expect(try await rotate(api, "ops", overlap: 0, token: adminOnly).status == .ok, "itself: within its scopes")
        }
    }

    /// The overlap ends by the clock, not by any change of the tokens: a cached previous secret is refused once its
    /// time has passed (the cache's clock is injected: no waiting).
    @Test func theReplacedSecretEndsWhenItsTimeHasPassedCachedOrNot() async throws {
        try await TestDatabase.withURL { _, client in
            let store = TokenStore(client: client)
            let old = try await store.create(name: "svc", scopes: [.eventsWrite])
            let clock = TestClock()
            let cache = TokenCache(tokens: store, now: { clock.now })
            #expect(try await accepted(old, by: cache, client: client))
            let rotated = try await store.rotate(name: "svc", overlap: .seconds(600))
            #expect(try await accepted(old, by: cache, client: client), "cached, within the overlap")
            #expect(try await accepted(rotated.secret, by: cache, client: client))
            clock.now = rotated.previousValidUntil.addingTimeInterval(1)
            #expect(try await !accepted(old, by: cache, client: client), "cached, past the overlap")
            #expect(try await !accepted(old, by: TokenCache(tokens: store, now: { clock.now }), client: client), "looked up, past it")
            #expect(try await accepted(rotated.secret, by: cache, client: client))
        }
    }

    /// As a request whose statement reads the token epoch (an append, a history page) confirms a cached token.
    func accepted(_ secret: String, by cache: TokenCache, client: SessionPool) async throws -> Bool {
        guard let (_, confirmation) = try await cache.authenticate(secret: secret) else { return false }
        guard let confirmation else { return true }
        let epoch = try await client.query("SELECT epoch FROM api_token_epoch", logger: .init(label: "test")) { rows in
            for try await epoch in rows.decode(Int64.self) { return epoch }
            return Int64(0)
        }
        do {
            try await TokenConfirmation.$current.withValue(confirmation) { try await TokenConfirmation.confirm(epoch: epoch) }
            return true
        } catch is TokenRevoked {
            return false
        }
    }
}

/// A clock a test moves by hand.
final class TestClock: @unchecked Sendable {
    private let lock = NSLock()
    private var current = Date()
    var now: Date {
        get { lock.withLock { current } }
        set { lock.withLock { current = newValue } }
    }
}
