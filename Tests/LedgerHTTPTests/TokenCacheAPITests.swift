import HTTPTypes
import LedgerCore
@testable import LedgerPostgres
import LedgerTestSupport
import Testing

/// Tokens are kept in memory (`TokenCache`), yet a revocation takes effect on the token's very next request, on
/// every route: the append's, the order's, the transaction's and the history page's own statements read the token
/// epoch, other routes look the token up before answering.
@Suite("HTTP: cached tokens, revoked at once")
struct TokenCacheAPITests {
    @Test func aRevokedWriterIsRefusedBeforeAnythingIsWritten() async throws {
        try await API.run { api in
            let lifecycle = Lifecycle()
            #expect(try await api.post("cached-1", lifecycle.created, token: "writer").status == .created)
            try await api.tokens.revoke(name: "writer")
            let after = try await api.post("cached-1", lifecycle.queued, token: "writer")
            #expect(after.status == .unauthorized, "\(after.bodyText)")
            #expect(after.errorCode == "unauthorized")
            #expect(try await api.ledger.store.count("events") == 1, "the revoked token's event was not written")
        }
    }

    @Test func aRevokedWriterGetsNoRefusalAndLeavesNoRefusalRow() async throws {
        try await API.run { api in
            let lifecycle = Lifecycle()
            #expect(try await api.post("cached-2", lifecycle.created, token: "writer").status == .created)
            try await api.tokens.revoke(name: "writer")
            // A grant before verification would be refused (409) and logged; a revoked token gets neither.
            let after = try await api.post("cached-2", lifecycle.granted(), token: "writer")
            #expect(after.status == .unauthorized, "\(after.bodyText)")
            #expect(try await api.ledger.store.count("refusals") == 0)
        }
    }

    @Test func aRevokedReaderIsRefusedItsHistory() async throws {
        try await API.run { api in
            #expect(try await api.post("cached-3", Lifecycle().created).status == .created)
            #expect(try await api.get("/v1/orders/cached-3/history", token: "reader").status == .ok)
            try await api.tokens.revoke(name: "reader")
            let after = try await api.get("/v1/orders/cached-3/history", token: "reader")
            #expect(after.status == .unauthorized, "\(after.bodyText)")
            // And on a route whose statements read no epoch (an unknown order's history: no rows).
            #expect(try await api.get("/v1/orders/none/history", token: "reader").status == .unauthorized)
        }
    }

    /// The order's and the transaction's own statements read the epoch too (`Ledger.orderAndRecovery`,
    /// `Ledger.transaction`).
    @Test(arguments: ["order", "transaction"]) func aRevokedReaderIsRefusedTheOrderAndTheTransaction(route: String) async throws {
        try await API.run { api in
            let lifecycle = Lifecycle()
            for event in [lifecycle.created, lifecycle.queued, lifecycle.receipt] {
                #expect(try await api.post("cached-5", event).status == .created)
            }
            let path = route == "order" ? "/v1/orders/cached-5" : "/v1/transactions/\(lifecycle.transactionId)"
            #expect(try await api.get(path, token: "reader").status == .ok)
            try await api.tokens.revoke(name: "reader")
            let after = try await api.get(path, token: "reader")
            #expect(after.status == .unauthorized, "\(after.bodyText)")
            #expect(after.errorCode == "unauthorized")
        }
    }

    @Test func anotherTokensChangeDoesNotLockAValidTokenOut() async throws {
        try await API.run { api in
            let lifecycle = Lifecycle()
            #expect(try await api.post("cached-4", lifecycle.created, token: "all").status == .created)
            #expect(try await api.get("/v1/orders/cached-4/history", token: "all").status == .ok)
            try await api.tokens.revoke(name: "reader")  // the epoch moves; "all" is still valid
            #expect(try await api.post("cached-4", lifecycle.queued, token: "all").status == .created)
            #expect(try await api.get("/v1/orders/cached-4/history", token: "all").status == .ok)
        }
    }
}
