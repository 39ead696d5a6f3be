/// Group commit for the appends a node decides from memory (`RecentStreams`): the appends that arrive while a group is
/// being written are written together, one statement and one commit for all (`StatementGroup`,
/// `AppendStatements.writeGroup`). Under load most appends are decided from memory, and a statement's fixed cost —
/// its commit and WAL flush, the executor's start for every CTE, the round trip — is most of PostgreSQL's work for a
/// single event: a group spreads it. A group holds appends of one kind (one per kind and pool), never two to one stream.
///
/// A write its guards stopped, or a group whose statement failed, is answered `notWritten`: that append reads and
/// decides again (`EventStore.append`), alone, as any append whose memory was stale.
typealias AppendGroup<Projection: StreamProjection> =
    StatementGroup<GroupedWrite<Projection>, GroupedWrite<Projection>.Outcome>

extension EventStore {
    /// The appends from memory of one kind on this store's pool, written together.
    func appendGroup<Projection: StreamProjection>(_ projection: Projection.Type) -> AppendGroup<Projection> {
        client.groups.group(GroupedWrite<Projection>.group)
    }
}

extension GroupedWrite {
    enum Outcome: Sendable {
        /// Written: where its events landed, and the stream's new last hash.
        case written(events: [AppendedEvent], lastHash: [UInt8])
        /// Nothing of it was written: a guard stopped it, or the group's statement failed.
        case notWritten
    }

    /// A group of at most 64 appends, one per stream. Its leader gathers under load (`StatementGroup`): a group's
    /// statement and commit cost PostgreSQL ~640 µs and `serve` ~520 µs whatever its size, where each append in it
    /// costs ~135 and ~260 (BENCHMARKS.md, stop 59). It gathers at most as long as the last group's write took, and
    /// never more than 5 ms: a write that waited on a stream's lock says nothing of the load.
    static func group() -> AppendGroup<Projection> {
        AppendGroup(largest: 64, key: \.streamId, gatherAtMost: { min($0, .milliseconds(5)) }) {
            if case .written = $0 { true } else { false }
        }
    }

    /// Writes `group` on a session of `pool` (what a group's leader runs).
    static func writeTogether(
        _ group: [GroupedWrite], statements: AppendStatements<Projection>, on pool: SessionPool
    ) async -> [Outcome] {
        do {
            let written = try await pool.withConnection(within: Deadline.remaining) { connection in
                // Past its deadline the connection is being closed, and a statement sent on a closing connection may
                // never answer (PostgresNIO 1.33), keeping its pool slot: the write is not sent.
                try Task.checkCancellation()
                return try await statements.writeGroup(group, on: connection)
            }
            return written.map { written in
                written.map { Outcome.written(events: $0.events, lastHash: $0.lastHash) } ?? .notWritten
            }
        } catch {
            return group.map { _ in .notWritten }
        }
    }
}
