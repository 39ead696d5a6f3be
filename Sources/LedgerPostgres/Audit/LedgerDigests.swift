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

/// Why sealing stopped: the next event's seal is broken, so no digest may vouch for it. `ledger verify` says more.
public struct SealRefused: Error, CustomStringConvertible {
    public let orderId: String
    public let version: Int
    public let problem: String
    public var description: String { "cannot seal past order \(orderId) version \(version): \(problem)" }
}

/// Reads and extends the digest checkpoints (`ledger_digests`).
public struct LedgerDigests: Sendable {
    let client: PostgresClient
    let logger: Logger

    public init(client: PostgresClient, logger: Logger = Logger(label: "ledger.digest")) {
        self.client = client
        self.logger = logger
    }

    /// The newest checkpoint; nil before the first seal.
    public func latest() async throws -> DigestCheckpoint? {
        try await client.query(
            """
            SELECT event_count, position, digest, recorded_at FROM ledger_digests
            ORDER BY event_count DESC LIMIT 1
            """, logger: logger
        ) { rows in
            for try await (count, position, digest, recordedAt) in rows.decode((Int64, Int64, ByteBuffer, Date).self) {
                return DigestCheckpoint(
                    eventCount: count, position: position, digest: Array(digest.readableBytesView), recordedAt: recordedAt)
            }
            return nil
        }
    }

    /// Every checkpoint, keyed by event count (for `verify`).
    func all() async throws -> [Int64: DigestCheckpoint] {
        var checkpoints: [Int64: DigestCheckpoint] = [:]
        let rows = try await client.query(
            "SELECT event_count, position, digest, recorded_at FROM ledger_digests", logger: logger)
        for try await (count, position, digest, recordedAt) in rows.decode((Int64, Int64, ByteBuffer, Date).self) {
            checkpoints[count] = DigestCheckpoint(
                eventCount: count, position: position, digest: Array(digest.readableBytesView), recordedAt: recordedAt)
        }
        return checkpoints
    }

    /// Folds the events recorded since the latest checkpoint into the digest and stores a new checkpoint (none when
    /// nothing is new). Each event's seal is checked first: a digest never vouches for a broken event. Sealers take
    /// turns on an advisory lock, so `serve` and `ledger seal` can run at once.
    @discardableResult
    public func seal() async throws -> DigestCheckpoint? {
        try await client.withConnection { connection in
            try await connection.query("SELECT pg_advisory_lock(\(Self.lockKey))", logger: logger)
            do {
                let checkpoint = try await extend(on: connection)
                try await connection.query("SELECT pg_advisory_unlock(\(Self.lockKey))", logger: logger)
                return checkpoint
            } catch {
                _ = try? await connection.query("SELECT pg_advisory_unlock(\(Self.lockKey))", logger: logger)
                throw error
            }
        }
    }

    /// "ledger digest" as an advisory-lock key (any constant; distinct from the migrator's).
    static let lockKey: Int64 = 0x6c65_6467_6572_6467

    private func extend(on connection: PostgresConnection) async throws -> DigestCheckpoint? {
        let start = try await latest()
        var digest = start?.digest ?? EventSeal.genesisDigest
        var count = start?.eventCount ?? 0
        var last: Int64?
        try await AuditLog(client: client, logger: logger).forEachInFeedOrder(.stable, after: start?.position) { audited in
            if let problem = audited.sealProblem {
                throw SealRefused(orderId: audited.event.orderId, version: audited.event.version, problem: problem)
            }
            digest = EventSeal.digest(previous: digest, eventHash: audited.hash!)
            count += 1
            last = audited.event.position
            return true
        }
        guard let last else { return nil }
        let rows = try await connection.query(
            """
            INSERT INTO ledger_digests (event_count, position, digest) VALUES (\(count), \(last), \(ByteBuffer(bytes: digest)))
            RETURNING recorded_at
            """, logger: logger)
        for try await recordedAt in rows.decode(Date.self) {
            return DigestCheckpoint(eventCount: count, position: last, digest: digest, recordedAt: recordedAt)
        }
        return nil
    }
}
