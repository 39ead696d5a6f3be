import Foundation
import LedgerPostgres
import LedgerTestSupport
import PostgresNIO
import Testing

/// Database work gives up at its deadline, whether it waits for a connection or on one, so no request hangs.
@Suite("Database: deadlines")
struct DeadlineTests {
    @Test func workStuckOnItsConnectionEndsAtTheDeadlineAndItsConnectionIsClosed() async throws {
        try await TestDatabase.withClient(poolSize: 2) { client in
            let started = ContinuousClock.now
            await #expect(throws: DatabaseTimeout.self) {
                try await client.withConnection(within: .milliseconds(300)) { connection in
                    // Stands for a query whose answer never comes (PostgresNIO queries ignore cancellation).
                    try await connection.query("SELECT pg_sleep(20)", logger: .init(label: "test"))
                }
            }
            let waited = ContinuousClock.now - started
            #expect(waited < .seconds(5), "the stuck query held the caller for \(waited)")
            // The pool replaced the closed connection: work goes on.
            let one = try await client.query("SELECT 1", logger: .init(label: "test")) { rows in
                for try await value in rows.decode(Int.self) { return value }
                return 0
            }
            #expect(one == 1)
        }
    }

    @Test func waitingForAConnectionEndsAtTheDeadline() async throws {
        try await TestDatabase.withClient(poolSize: 1) { client in
            let holder = Task {
                try await client.withConnection(within: .seconds(30)) { connection in
                    try await connection.query("SELECT pg_sleep(3)", logger: .init(label: "test"))
                }
            }
            try await Task.sleep(for: .milliseconds(300))  // the holder has the pool's only connection
            let started = ContinuousClock.now
            await #expect(throws: DatabaseTimeout.self) {
                try await client.withConnection(within: .milliseconds(300)) { _ in }
            }
            #expect(ContinuousClock.now - started < .seconds(2))
            try await holder.value
        }
    }

    @Test func workThatFinishesInTimeReturnsItsResultAndErrors() async throws {
        try await TestDatabase.withClient { client in
            let value = try await client.withConnection(within: .seconds(5)) { connection in
                for try await value in try await connection.query("SELECT 41 + 1", logger: .init(label: "test")).decode(Int.self) {
                    return value
                }
                return 0
            }
            #expect(value == 42)
            struct Refused: Error {}
            await #expect(throws: Refused.self) {
                try await client.withConnection(within: .seconds(5)) { _ in throw Refused() }
            }
        }
    }
}
