import Foundation
import LedgerCore
import Logging
import PostgresNIO

/// A checkpoint of the running ledger digest (`EventSeal`): after `eventCount` events in feed order, the last at
/// `position`, the digest was `digest`. An auditor saves `digest@position` and later proves nothing before it changed.
public struct DigestCheckpoint: Sendable, Hashable {
    public var eventCount: Int64
    public var position: Int64
    public var digest: [UInt8]
    public var recordedAt: Date

    /// `DIGEST@POSITION`, the form `ledger verify --digest` takes.
    public var pinned: String { "\(digest.hex)@\(position)" }
}

/// Why sealing stopped: the next event's seal is broken, so no digest may vouch for it or anything after it in feed
/// order. Everything before it was sealed (`sealedUpTo`); reads go on as before. `ledger verify` says more, and
/// docs/operating.md says what an operator does.
public struct SealRefused: Error, CustomStringConvertible {
    public let stream: StreamName
    public let version: Int
    public let position: Int64
    public let problem: String
    /// The newest checkpoint, which covers every event before the broken one (nil if none could be sealed).
    public let sealedUpTo: DigestCheckpoint?
    public var description: String {
        "sealing stopped at \(stream) version \(version) (position \(position)): \(problem). "
            + "Events before it are sealed\(sealedUpTo.map { " (\($0.pinned))" } ?? ""); "
            + "run `ledger verify` and see docs/operating.md, \"A broken seal\""
    }
}

/// What `LedgerDigests.seal` does when another sealer holds the turn.
public enum ConcurrentSealing: Sendable {
    case wait
    case skip
}

/// Reads and extends the digest checkpoints (`ledger_digests`).
struct LedgerDigests: Sendable {
    let client: SessionPool
    let logger: Logger

    init(client: SessionPool, logger: Logger = Logger(label: "ledger.digest")) {
        self.client = client
        self.logger = logger
    }

    /// The newest checkpoint; nil before the first seal.
    func latest() async throws -> DigestCheckpoint? {
        let logger = self.logger
        return try await client.withConnection(within: Deadline.remaining) { connection in
            try await Self.latest(on: connection, logger: logger)
        }
    }

    private static func latest(on connection: PostgresConnection, logger: Logger) async throws -> DigestCheckpoint? {
        let rows = try await connection.statement(
            """
            SELECT event_count, position, digest, recorded_at FROM ledger_digests
            ORDER BY event_count DESC LIMIT 1
            """, logger: logger)
        for try await (count, position, digest, recordedAt) in rows.decode((Int64, Int64, ByteBuffer, Date).self) {
            return DigestCheckpoint(
                eventCount: count, position: position, digest: Array(digest.readableBytesView), recordedAt: recordedAt)
        }
        return nil
    }

    /// Every checkpoint, keyed by event count (for `verify`).
    func all() async throws -> [Int64: DigestCheckpoint] {
        var checkpoints: [Int64: DigestCheckpoint] = [:]
        let rows = try await client.query(
            "SELECT event_count, position, digest, recorded_at FROM ledger_digests", .reads, logger: logger)
        for try await (count, position, digest, recordedAt) in rows.decode((Int64, Int64, ByteBuffer, Date).self) {
            checkpoints[count] = DigestCheckpoint(
                eventCount: count, position: position, digest: Array(digest.readableBytesView), recordedAt: recordedAt)
        }
        return checkpoints
    }

    /// Folds the events recorded since the latest checkpoint into the digest and stores a new checkpoint (none when
    /// nothing is new). Each event's seal is checked first: a digest never vouches for a broken event, so sealing
    /// stops just before one, stores what it could and throws `SealRefused` naming it. Sealers take turns on an
    /// advisory lock, so `serve` and `ledger seal` can run at once.
    ///
    /// `whenAnotherIsSealing`: `.wait` for its turn (`ledger seal`), or `.skip` — return nil at once and leave this
    /// round to the sealer at work (`serve`'s periodic sealing, on every node: a node waiting for the lock would
    /// meet its sessions' `lock_timeout` whenever another node's seal is slowed by load, and gain nothing by
    /// waiting, since the other sealer's checkpoint covers what this one would have sealed).
    @discardableResult
    func seal(whenAnotherIsSealing: ConcurrentSealing = .wait) async throws -> DigestCheckpoint? {
        try await client.withConnection { connection in
            switch whenAnotherIsSealing {
            case .wait:
                try await connection.queryToEnd("SELECT pg_advisory_lock(\(Self.lockKey))", logger: logger)
            case .skip:
                var locked = false
                for try await acquired in try await connection.statement(
                    "SELECT pg_try_advisory_lock(\(Self.lockKey))", logger: logger
                ).decode(Bool.self) { locked = acquired }
                guard locked else { return nil }
            }
            do {
                let checkpoint = try await extend(on: connection)
                try await connection.queryToEnd("SELECT pg_advisory_unlock(\(Self.lockKey))", logger: logger)
                return checkpoint
            } catch {
                // A session that closed (a failed commit closes it) holds no lock, and a statement written to it may
                // never answer (PostgresNIO 1.33).
                if !connection.isClosed {
                    _ = try? await connection.statement("SELECT pg_advisory_unlock(\(Self.lockKey))", logger: logger)
                }
                throw error
            }
        }
    }

    /// A checkpoint of the ledger as it is now, for `ledger seal` and `ledger digest`. Sealing stops below the oldest
    /// transaction still open, so this first waits (up to `wait`) for the transactions open when it was called to
    /// end: every event committed before the call is then covered.
    func sealNow(waitingAtMost wait: Duration = .seconds(10)) async throws -> DigestCheckpoint? {
        try await waitForTransactionsOpenNow(atMost: wait)
        if let sealed = try await seal() { return sealed }
        return try await latest()
    }

    /// `sealNow`, for a role that may only read checkpoints too: it gets the latest stored one, and `sealed` false.
    func sealIfPermitted() async throws -> (checkpoint: DigestCheckpoint?, sealed: Bool) {
        do {
            return (try await sealNow(), true)
        } catch where sqlState(of: error) == SQLStates.insufficientPrivilege {
            return (try await latest(), false)
        }
    }

    /// Returns once every append running when it was called has ended (the feed's horizon has passed them), or
    /// `atMost` has passed. PostgreSQL has no statement that waits for another transaction's end, so this polls (20 ms).
    private func waitForTransactionsOpenNow(atMost: Duration) async throws {
        var horizon: String?
        for try await xmax in try await client.query("SELECT pg_snapshot_xmax(pg_current_snapshot())::text", .reads, logger: logger)
            .decode(String.self) { horizon = xmax }
        guard let horizon else { return }
        let deadline = ContinuousClock.now + atMost
        while ContinuousClock.now < deadline {
            for try await passed in try await client.query(
                "SELECT \(unescaped: EventStore.feedHorizon) >= \(horizon)::xid8", .reads, logger: logger
            ).decode(Bool.self) where passed { return }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// "ledger digest" as an advisory-lock key (any constant; distinct from the migrator's).
    static let lockKey: Int64 = 0x6c65_6467_6572_6467

    /// Everything on `connection`, the session that holds the sealer's turn: sealing takes one session of its pool.
    private func extend(on connection: PostgresConnection) async throws -> DigestCheckpoint? {
        let start = try await Self.latest(on: connection, logger: logger)
        var digest = start?.digest ?? EventSeal.genesisDigest
        var count = start?.eventCount ?? 0
        var last: Int64?
        var broken: AuditedEvent?
        try await AuditLog(client: client, logger: logger).forEachInFeedOrder(.stable, after: start?.position, on: connection) { audited in
            guard audited.sealProblem == nil, let hash = audited.hash else {
                broken = audited
                return false
            }
            digest = EventSeal.digest(previous: digest, eventHash: hash)
            count += 1
            last = audited.event.position
            return true
        }
        var checkpoint: DigestCheckpoint?
        if let last {
            checkpoint = try await store(DigestCheckpoint(eventCount: count, position: last, digest: digest, recordedAt: .now), on: connection)
        }
        if let broken {
            throw SealRefused(
                stream: broken.event.stream, version: broken.event.version, position: broken.event.position,
                problem: broken.sealProblem ?? "the event is not sealed", sealedUpTo: checkpoint ?? start)
        }
        return checkpoint
    }

    /// Inserts the checkpoint; returns it with the time the database recorded.
    private func store(_ checkpoint: DigestCheckpoint, on connection: PostgresConnection) async throws -> DigestCheckpoint {
        let rows = try await connection.statement(
            """
            INSERT INTO ledger_digests (event_count, position, digest)
            VALUES (\(checkpoint.eventCount), \(checkpoint.position), \(ByteBuffer(bytes: checkpoint.digest)))
            RETURNING recorded_at
            """, logger: logger)
        var stored = checkpoint
        for try await recordedAt in rows.decode(Date.self) { stored.recordedAt = recordedAt }
        // Confirmed here, not only when the session goes back: the unlock after it must not be the first to learn.
        try await connection.confirmCommitted()
        return stored
    }
}
