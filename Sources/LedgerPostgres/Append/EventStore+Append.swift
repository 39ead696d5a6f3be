import Foundation
import LedgerCore
import Logging
import PostgresNIO

/// The store's part of the append path (steps 3 to 8, Ledger+Record.swift), for any kind of stream: two statements
/// on one connection, no transaction — or only the write, when this node remembers the stream (`RecentStreams`), and
/// then one statement shared with the other appends of its kind decided from memory meanwhile (`AppendGroup`). What
/// the kind reads and writes beside its events is its `StreamProjection`'s. A lost race (the version moved, an event
/// id or a transaction taken meanwhile) reads and decides again, now queued behind the stream's advisory lock inside
/// a transaction, so many writers on one stream take turns instead of racing.
extension EventStore {
    /// Appends `events` to the stream `id` of `projection`'s kind, all or nothing; `decide` gives, from what the
    /// append read, what the events leave (written with them; nil writes no projection). `claims` are the keys the new
    /// events name that the projection reads (an order's transaction ids). The projection is returned with the
    /// append's result; it is nil for a replay (`decide` did not run). Once committed, new events are told
    /// (`NewEvents`).
    func append<Projection: StreamProjection>(
        to id: String, of projection: Projection.Type, expectedVersion: ExpectedVersion = .any, events: [NewEvent],
        claims: [String] = [],
        decide: @escaping @Sendable (AppendSnapshot<Projection.Read>) throws -> Projection.Written?
    ) async throws -> (result: AppendResult, projected: Projection.Written?) {
        let appended = try await commit(
            to: id, of: projection, expectedVersion: expectedVersion, events: events, claims: claims, decide: decide)
        if !appended.result.isReplay { newEvents.committed() }
        return appended
    }

    /// `append`, up to its commit.
    private func commit<Projection: StreamProjection>(
        to id: String, of projection: Projection.Type, expectedVersion: ExpectedVersion, events: [NewEvent],
        claims: [String], decide: @escaping @Sendable (AppendSnapshot<Projection.Read>) throws -> Projection.Written?
    ) async throws -> (result: AppendResult, projected: Projection.Written?) {
        guard !events.isEmpty else { throw EventStoreError.emptyAppend }
        let stream = StreamName(Projection.kind, id)
        let statements = AppendStatements<Projection>(logger: logger)
        let memory = recentStreams
        typealias Snapshot = AppendSnapshot<Projection.Read>
        typealias Outcome = (AppendResult, Projection.Written?)
        // Writes what was decided from `snapshot` and remembers the stream it leaves; nil: another writer moved it.
        let write = { @Sendable (snapshot: Snapshot, written: Projection.Written?, connection: PostgresConnection,
                                 queued: Bool) async throws -> Outcome? in
            // Past its deadline the connection is being closed, and a statement sent on a closing connection may
            // never answer (PostgresNIO 1.33), keeping its pool slot: the write is not sent.
            try Task.checkCancellation()
            guard let stored = try await statements.write(
                events, after: snapshot, projecting: written, queued: queued, on: connection)
            else { return nil }
            memory.remember(stream, written.map { written in
                RecentStreams.Stream(
                    version: snapshot.version + events.count, lastHash: stored.lastHash,
                    recordedAt: snapshot.recordedAt, written: written)
            })
            return (AppendResult(stream: stream, events: stored.events, isReplay: false), written)
        }
        let attempt = { @Sendable (connection: PostgresConnection, queued: Bool) async throws -> Outcome? in
            let sentAt = memory.nodeClock()
            let snapshot = try await statements.read(stream, events: events, claims: claims, on: connection)
            memory.observe(databaseClock: snapshot.recordedAt, sentAt: sentAt)
            if let epoch = snapshot.tokenEpoch { try await TokenConfirmation.confirm(epoch: epoch) }
            if let replay = try Self.replay(of: events, to: stream, in: snapshot.stored) { return (replay, nil) }
            guard expectedVersion.admits(snapshot.version) else {
                throw EventStoreError.versionConflict(stream: stream, expected: expectedVersion, actual: snapshot.version)
            }
            return try await write(snapshot, try decide(snapshot), connection, queued)
        }
        // The first try, without a read, when this node remembers the stream (`RecentStreams`): written with the
        // appends around it (`AppendGroup`). Nil — nothing remembered, a refusal or a conflict that only a read may
        // answer, a write its guards stopped or whose group failed — and the append reads.
        let fromMemory = { @Sendable () async throws -> Outcome? in
            guard let snapshot = Snapshot.remembered(
                      stream, of: Projection.self, events: events, tokenEpoch: TokenConfirmation.pendingEpoch,
                      in: memory),
                  expectedVersion.admits(snapshot.version), let written = try? decide(snapshot)
            else { return nil }
            try Task.checkCancellation()
            let grouped = GroupedWrite<Projection>(events: events, snapshot: snapshot, written: written)
            let outcome = await appendGroup(Projection.self).run(grouped) { group in
                await GroupedWrite.writeTogether(group, statements: statements, on: client)
            }
            guard case .written(let stored, let lastHash) = outcome else {
                memory.missed(stream)
                return nil
            }
            memory.remember(stream, RecentStreams.Stream(
                version: snapshot.version + events.count, lastHash: lastHash, recordedAt: snapshot.recordedAt,
                written: written))
            if let epoch = snapshot.tokenEpoch { try await TokenConfirmation.confirm(epoch: epoch) }
            return (AppendResult(stream: stream, events: stored, isReplay: false), written)
        }
        if let outcome = try await fromMemory() { return outcome }
        var losses = 0
        while true {
            do {
                let queued = losses > 0
                let outcome = try await client.withConnection(within: Deadline.remaining) { connection -> Outcome? in
                    guard queued else { return try await attempt(connection, false) }
                    return try await connection.transaction(logger: logger) { connection in
                        try await statements.queue(for: stream, on: connection)
                        // Holding the queue, only a writer that read before it can still move the stream: a few turns.
                        for _ in 0..<Self.raceRetries {
                            if let outcome = try await attempt(connection, true) { return outcome }
                        }
                        return nil
                    }
                }
                if let outcome { return outcome }
                guard losses < Self.raceRetries else { throw EventStoreError.contended(stream: stream) }
            } catch where losses < Self.raceRetries && Self.isLostRace(error, queued: losses > 0) {
            } catch {
                // A write whose commit was not confirmed may have left the stream as remembered, or not.
                memory.missed(stream)
                throw error
            }
            losses += 1
        }
    }

    /// Appends to an order's stream without a projection (the store's own tests).
    func append(to orderId: String, expectedVersion: ExpectedVersion = .any, events: [NewEvent]) async throws -> AppendResult {
        try await append(to: orderId, of: OrderProjection.self, expectedVersion: expectedVersion, events: events) { _ in nil }
            .result
    }

    /// A unique violation (an event id or a stream taken meanwhile), a deadlock, a transaction claimed meanwhile
    /// (schema/008); and, outside the queue, a stream row another writer holds (queued, that writer's lock is
    /// waited for, and a lock timeout is the server's limit, not a race).
    private static func isLostRace(_ error: any Error, queued: Bool) -> Bool {
        let state = sqlState(of: error)
        if !queued && state == SQLStates.lockNotAvailable { return true }
        return [SQLStates.uniqueViolation, SQLStates.deadlockDetected, SQLStates.serializationFailure].contains(state)
    }

    /// The original result when every event id is already stored in `stream` with the same type and data;
    /// nil when none is stored; an idempotency conflict otherwise.
    private static func replay(of events: [NewEvent], to stream: StreamName, in found: [StoredEventId]) throws -> AppendResult? {
        var stored: [UUID: AppendedEvent] = [:]
        for found in found {
            guard found.sameContent else {
                throw EventStoreError.idempotencyConflict(eventId: found.event.eventId, stored: found.stream)
            }
            stored[found.event.eventId] = found.event
        }
        if stored.isEmpty { return nil }
        // A batch is replayed whole or not at all: a request that mixes stored and new events is a different request.
        if let firstNew = events.first(where: { stored[$0.eventId] == nil }) {
            throw EventStoreError.idempotencyConflict(eventId: firstNew.eventId, stored: stream)
        }
        return AppendResult(stream: stream, events: events.compactMap { stored[$0.eventId] }, isReplay: true)
    }
}
