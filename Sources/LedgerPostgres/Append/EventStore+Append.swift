import Foundation
import LedgerCore
import Logging
import PostgresNIO

/// The store's part of the append path (steps 3 to 8, Ledger+Record.swift): two statements on one connection, no
/// transaction — or only the write, when this node remembers the stream (`RecentStreams`), and then one statement
/// shared with the other appends decided from memory meanwhile (`AppendGroup`). A lost race (the version
/// moved, an event id or a transaction taken meanwhile) reads and decides again, now queued behind the order's
/// advisory lock inside a transaction, so many writers on one order take turns instead of racing.
extension EventStore {
    /// Decides, from what the append read, the order the events leave (written with them); nil writes no projection.
    public typealias Projection = @Sendable (AppendSnapshot) throws -> Order?

    /// Appends `events` to the order's stream, all or nothing. See the type's documentation for the steps.
    /// The projected order is returned with the append's result; it is nil for a replay (the projection did not run).
    func append(
        to orderId: String,
        expectedVersion: ExpectedVersion = .any,
        events: [NewEvent],
        transactionIds: [String] = [],
        projection: @escaping Projection
    ) async throws -> (result: AppendResult, projected: Order?) {
        guard !events.isEmpty else { throw EventStoreError.emptyAppend }
        let statements = AppendStatements(logger: logger)
        let memory = recentStreams
        typealias Outcome = (AppendResult, Order?)
        // Writes what was decided from `snapshot` and remembers the stream it leaves; nil: another writer moved it.
        let write = { @Sendable (snapshot: AppendSnapshot, order: Order?, connection: PostgresConnection, queued: Bool)
            async throws -> Outcome? in
            // Past its deadline the connection is being closed, and a statement sent on a closing connection may
            // never answer (PostgresNIO 1.33), keeping its pool slot: the write is not sent.
            try Task.checkCancellation()
            guard let written = try await statements.write(
                events, after: snapshot, projecting: order, queued: queued, on: connection)
            else { return nil }
            memory.remember(orderId, order.map { order in
                RecentStreams.Stream(
                    version: snapshot.version + events.count, lastHash: written.lastHash,
                    recordedAt: snapshot.recordedAt, order: order)
            })
            return (AppendResult(orderId: orderId, events: written.events, isReplay: false), order)
        }
        let attempt = { @Sendable (connection: PostgresConnection, queued: Bool) async throws -> Outcome? in
            let sentAt = memory.nodeClock()
            let snapshot = try await statements.read(
                orderId, events: events, transactionIds: transactionIds, on: connection)
            memory.observe(databaseClock: snapshot.recordedAt, sentAt: sentAt)
            if let epoch = snapshot.tokenEpoch { try await TokenConfirmation.confirm(epoch: epoch) }
            if let replay = try Self.replay(of: events, in: snapshot) { return (replay, nil) }
            guard expectedVersion.admits(snapshot.version) else {
                throw EventStoreError.versionConflict(orderId: orderId, expected: expectedVersion, actual: snapshot.version)
            }
            return try await write(snapshot, try projection(snapshot), connection, queued)
        }
        // The first try, without a read, when this node remembers the stream (`RecentStreams`): written with the
        // appends around it (`AppendGroup`). Nil — nothing remembered, a refusal or a conflict that only a read may
        // answer, a write its guards stopped or whose group failed — and the append reads.
        let fromMemory = { @Sendable () async throws -> Outcome? in
            guard let snapshot = AppendSnapshot.remembered(
                      orderId, events: events, tokenEpoch: TokenConfirmation.pendingEpoch, in: memory),
                  expectedVersion.admits(snapshot.version), let order = try? projection(snapshot)
            else { return nil }
            try Task.checkCancellation()
            let grouped = GroupedWrite(events: events, snapshot: snapshot, order: order)
            let outcome = await appendGroup.run(grouped) { group in
                await GroupedWrite.writeTogether(group, statements: statements, on: client)
            }
            guard case .written(let written, let lastHash) = outcome else {
                memory.missed(orderId)
                return nil
            }
            memory.remember(orderId, RecentStreams.Stream(
                version: snapshot.version + events.count, lastHash: lastHash, recordedAt: snapshot.recordedAt, order: order))
            if let epoch = snapshot.tokenEpoch { try await TokenConfirmation.confirm(epoch: epoch) }
            return (AppendResult(orderId: orderId, events: written, isReplay: false), order)
        }
        if let outcome = try await fromMemory() { return outcome }
        var losses = 0
        while true {
            do {
                let queued = losses > 0
                let outcome = try await client.withConnection(within: Deadline.remaining) { connection -> Outcome? in
                    guard queued else { return try await attempt(connection, false) }
                    return try await connection.withTransaction(logger: logger) { connection in
                        try await statements.queue(for: orderId, on: connection)
                        // Holding the queue, only a writer that read before it can still move the stream: a few turns.
                        for _ in 0..<Self.raceRetries {
                            if let outcome = try await attempt(connection, true) { return outcome }
                        }
                        return nil
                    }
                }
                if let outcome { return outcome }
                guard losses < Self.raceRetries else { throw EventStoreError.contended(orderId: orderId) }
            } catch where losses < Self.raceRetries && Self.isLostRace(error, queued: losses > 0) {
            } catch {
                // A write whose commit was not confirmed may have left the stream as remembered, or not.
                memory.missed(orderId)
                throw underlyingError(error)  // a refusal or conflict thrown inside the queue's transaction
            }
            losses += 1
        }
    }

    /// Appends without a projection.
    func append(to orderId: String, expectedVersion: ExpectedVersion = .any, events: [NewEvent]) async throws -> AppendResult {
        try await append(to: orderId, expectedVersion: expectedVersion, events: events) { _ in nil }.result
    }

    /// A unique violation (an event id or a stream taken meanwhile), a deadlock, a transaction claimed meanwhile
    /// (schema/008); and, outside the queue, a stream row another writer holds (queued, that writer's lock is
    /// waited for, and a lock timeout is the server's limit, not a race).
    private static func isLostRace(_ error: any Error, queued: Bool) -> Bool {
        let state = sqlState(of: error)
        if !queued && state == SQLStates.lockNotAvailable { return true }
        return [SQLStates.uniqueViolation, SQLStates.deadlockDetected, SQLStates.serializationFailure].contains(state)
    }

    /// The original result when every event id is already stored with the same order, type and data;
    /// nil when none is stored; an idempotency conflict otherwise.
    private static func replay(of events: [NewEvent], in snapshot: AppendSnapshot) throws -> AppendResult? {
        var stored: [UUID: AppendedEvent] = [:]
        for found in snapshot.stored {
            guard found.sameContent else {
                throw EventStoreError.idempotencyConflict(eventId: found.event.eventId, storedOrderId: found.orderId)
            }
            stored[found.event.eventId] = found.event
        }
        if stored.isEmpty { return nil }
        // A batch is replayed whole or not at all: a request that mixes stored and new events is a different request.
        if let firstNew = events.first(where: { stored[$0.eventId] == nil }) {
            throw EventStoreError.idempotencyConflict(eventId: firstNew.eventId, storedOrderId: snapshot.orderId)
        }
        return AppendResult(orderId: snapshot.orderId, events: events.compactMap { stored[$0.eventId] }, isReplay: true)
    }
}
