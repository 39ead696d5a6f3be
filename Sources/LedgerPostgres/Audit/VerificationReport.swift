import Foundation
import LedgerCore

/// What `ledger verify` found. It passed when every list is empty and a requested digest matched.
public struct VerificationReport: Sendable {
    /// An event whose seal does not hold: its row was edited, or its hash does not chain.
    public struct BrokenEvent: Sendable, Hashable {
        public var stream: StreamName
        public var version: Int
        public var position: Int64
        public var problem: String
    }

    /// A projection value that is not what the fold of its stream's events gives; or a stream this build cannot fold.
    public struct Drift: Sendable, Hashable {
        public var table: String
        public var key: String
        public var field: String
        public var stored: String
        public var folded: String
    }

    /// The outcome of checking a digest an auditor saved.
    public enum DigestOutcome: Sendable, Hashable {
        case matched
        case mismatch(computed: String)
        /// The stored hashes still give the digest, but events up to the position no longer match their hashes.
        case eventsAltered(count: Int)
        /// No event at that position has been sealed into the feed.
        case positionNotFound
    }

    public var eventsChecked = 0
    public var ordersChecked = 0
    public var subscriptionsChecked = 0
    public var checkpointsChecked = 0
    public var brokenEvents: [BrokenEvent] = []
    /// Stored checkpoints (`ledger_digests`) that the recomputed digest contradicts.
    public var checkpointMismatches: [DigestCheckpoint] = []
    public var digest: (pinned: PinnedDigest, outcome: DigestOutcome)?
    public var drift: [Drift] = []

    public var passed: Bool {
        brokenEvents.isEmpty && checkpointMismatches.isEmpty && drift.isEmpty && (digest.map { $0.outcome == .matched } ?? true)
    }
}

/// `DIGEST@POSITION` as an auditor saved it from `ledger digest` or `GET /v1/ledger/digest`.
public struct PinnedDigest: Sendable, Hashable, CustomStringConvertible {
    public var digest: [UInt8]
    public var position: Int64

    public init?(_ text: String) {
        let parts = text.split(separator: "@")
        guard parts.count == 2, let digest = [UInt8](hex: String(parts[0])), digest.count == 32,
              let position = Int64(parts[1]), position > 0
        else { return nil }
        self.digest = digest
        self.position = position
    }

    public var description: String { "\(digest.hex)@\(position)" }
}
