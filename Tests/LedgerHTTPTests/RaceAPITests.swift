import Foundation
import HTTPTypes
import Hummingbird
import LedgerCore
import LedgerHTTP
@testable import LedgerPostgres
import LedgerTestSupport
import Testing

/// 64 concurrent clients against the API: every race has exactly one winner, counted.
@Suite("HTTP: 64-client races end exactly once")
struct RaceAPITests {
    static let clients = 64

    /// Runs `clients` requests at once and returns their statuses.
    static func race(_ body: @escaping @Sendable (Int) async throws -> API.Answer) async throws -> [API.Answer] {
        try await withThrowingTaskGroup(of: API.Answer.self) { group in
            for client in 0..<clients { group.addTask { try await body(client) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
    }

    @Test func sixtyFourClientsWithTheSameExpectedVersionLeaveOneWinner() async throws {
        try await API.run { api in
            let lifecycle = Lifecycle()
            _ = try await api.post("order-1", lifecycle.created)
            let answers = try await Self.race { _ in
                var body = lifecycle.queued.json
                if case .object(var members) = body { members["expectedVersion"] = 1; body = .object(members) }
                return try await api.post("order-1", body)
            }
            #expect(answers.filter { $0.status == .created }.count == 1)
            #expect(answers.filter { $0.errorCode == "version_conflict" }.count == Self.clients - 1)
            #expect(try await api.ledger.store.count("events") == 2)
        }
    }

    @Test func sixtyFourOrdersClaimingOneTransactionBindAndCreditItOnce() async throws {
        try await API.run { api in
            var lifecycle = Lifecycle()
            lifecycle.transactionId = "shared-tx"
            for n in 0..<Self.clients {
                for event in lifecycle.happyPath.prefix(2) { _ = try await api.post("order-\(n)", event) }
            }
            // The same receipt submitted for 64 orders at once (each its own event id): one order gets it.
            let receipt = lifecycle.receipt
            let claims = try await Self.race { n in
                try await api.post("order-\(n)", Submission(eventId: UUID(), type: receipt.type, data: receipt.data))
            }
            #expect(claims.filter { $0.status == .created }.count == 1)
            #expect(claims.filter { $0.errorCode == "transaction_bound_elsewhere" }.count == Self.clients - 1)
            #expect(try await api.ledger.store.count("order_transactions WHERE transaction_id = 'shared-tx'") == 1)

            let winner = try #require(try await api.ledger.transaction("shared-tx")).orderId
            _ = try await api.post(winner, lifecycle.verified)
            let grant = lifecycle.granted()
            let grants = try await Self.race { n in
                try await api.post(n == 0 ? winner : "order-\(n)", Submission(eventId: UUID(), type: grant.type, data: grant.data))
            }
            #expect(grants.filter { $0.status == .created }.count == 1)
            #expect(grants.allSatisfy { $0.status == .created || $0.status == .conflict })
            #expect(try await api.ledger.store.count("orders WHERE state = 'granted'") == 1)
            // What `ledger verify` checks: every order's chain and every projection, after both races.
            let report = try await LedgerDatabase(client: api.ledger.client).operations.verify()
            #expect(report.passed, "\(report.brokenEvents.prefix(3)) \(report.drift.prefix(3))")
        }
    }

    @Test func aRetryStormOfOneRequestStoresItOnceAndReplaysTheRest() async throws {
        try await API.run { api in
            let created = Lifecycle().created
            let answers = try await Self.race { _ in try await api.post("order-1", created) }
            #expect(answers.filter { $0.status == .created }.count == 1)
            let replays = answers.filter { $0.status == .ok && $0.headers[HTTPField.Name("Idempotent-Replay")!] == "true" }
            #expect(replays.count == Self.clients - 1)
            #expect(Set(answers.map(\.bodyText)).count == 1, "every replay answers the identical body")
            #expect(try await api.ledger.store.count("events") == 1)
        }
    }
}
