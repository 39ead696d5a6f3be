import Synchronization

/// Group commit for the appends a node decides from memory (`RecentStreams`): those that arrive while a group is
/// being written wait, and the first of them then writes them all in one statement (`AppendStatements.writeGroup`)
/// — one round trip, one commit, one WAL flush for all. Under load most appends are decided from memory, and a
/// statement's fixed cost (its commit, the executor's start for every CTE, the round trip) is most of PostgreSQL's
/// work for a single event: a group spreads it.
///
/// One group at a time per pool (`EventLoopPools`: one per event loop), led by the append that found none being
/// written, or, once one has been written, by the longest waiting append, which takes every append waiting behind
/// it (at most `largest`; a second append to an order already in the group waits for the next one). An append
/// alone is its own group: written at once, as before, in the same statement. Nobody waits on a timer, so a lone
/// append is not delayed, and the groups grow with the load.
///
/// A write its guards stopped, or a group whose statement failed, is answered `notWritten`: that append reads and
/// decides again (`EventStore.append`), alone, as any append whose memory was stale. The leader writes within its
/// own request's deadline (`Deadline.remaining`); the others waiting behind it arrived after it, so their own
/// deadlines end later.
final class AppendGroup: Sendable {
    /// What an append waiting for a group is told.
    enum Turn: Sendable {
        /// Written: where its events landed, and the stream's new last hash.
        case written(events: [AppendedEvent], lastHash: [UInt8])
        /// Nothing of it was written: a guard stopped it, or the group's statement failed.
        case notWritten
        /// No group is being written now: write the next one.
        case lead
    }

    /// The most writes in one statement.
    static let largest = 64

    private struct Waiting {
        let write: GroupedWrite
        let continuation: CheckedContinuation<Turn, Never>
    }

    private struct State {
        var waiting: [Waiting] = []
        var writing = false
        /// What the groups have done so far: how tests see that appends were grouped, and which were written.
        var statistics = Statistics()

        /// The waiting appends to write with `own`, taken from the queue: the longest waiting first, one per order.
        mutating func takeGroup(with own: GroupedWrite) -> [Waiting] {
            guard !waiting.isEmpty else { return [] }
            var orders: Set<String> = [own.orderId]
            var taken: [Waiting] = []
            var kept: [Waiting] = []
            for next in waiting {
                if taken.count < AppendGroup.largest - 1, orders.insert(next.write.orderId).inserted {
                    taken.append(next)
                } else {
                    kept.append(next)
                }
            }
            waiting = kept
            return taken
        }

        /// The append to lead the next group, or none: then no group is being written.
        mutating func nextLeader() -> Waiting? {
            guard !waiting.isEmpty else {
                writing = false
                return nil
            }
            return waiting.removeFirst()
        }
    }

    struct Statistics: Sendable {
        /// The most writes one statement carried.
        var largestGroup = 0
        /// The writes the group statements wrote (not those their guards stopped, nor those of a failed statement).
        var written = 0
        /// Whether a group is being written now, and how many appends wait for the next.
        var writing = false
        var waiting = 0
    }

    private let state = Mutex(State())

    var statistics: Statistics {
        state.withLock { state in
            var statistics = state.statistics
            statistics.writing = state.writing
            statistics.waiting = state.waiting.count
            return statistics
        }
    }

    /// Writes `write` with the appends around it, on a session of `pool`.
    func write(_ write: GroupedWrite, statements: AppendStatements, on pool: SessionPool) async -> Turn {
        let turn = await withCheckedContinuation { continuation in
            let leads = state.withLock { state in
                guard state.writing else {
                    state.writing = true
                    return true
                }
                state.waiting.append(Waiting(write: write, continuation: continuation))
                return false
            }
            if leads { continuation.resume(returning: .lead) }
        }
        guard case .lead = turn else { return turn }
        let others = state.withLock { $0.takeGroup(with: write) }
        let turns = await Self.writeTogether([write] + others.map(\.write), statements: statements, on: pool)
        for (waiting, turn) in zip(others, turns.dropFirst()) { waiting.continuation.resume(returning: turn) }
        // Always handed on, whatever the group's fate: a group left unled would hold its appends for good.
        let next = state.withLock { state in
            state.statistics.largestGroup = max(state.statistics.largestGroup, turns.count)
            state.statistics.written += turns.count { if case .written = $0 { true } else { false } }
            return state.nextLeader()
        }
        next?.continuation.resume(returning: .lead)
        return turns[0]
    }

    private static func writeTogether(
        _ group: [GroupedWrite], statements: AppendStatements, on pool: SessionPool
    ) async -> [Turn] {
        do {
            let written = try await pool.withConnection(within: Deadline.remaining) { connection in
                // Past its deadline the connection is being closed, and a statement sent on a closing connection may
                // never answer (PostgresNIO 1.33), keeping its pool slot: the write is not sent.
                try Task.checkCancellation()
                return try await statements.writeGroup(group, on: connection)
            }
            return written.map { written in
                written.map { Turn.written(events: $0.events, lastHash: $0.lastHash) } ?? .notWritten
            }
        } catch {
            return group.map { _ in .notWritten }
        }
    }
}
