import Foundation
import LedgerCore

/// An order this node holds on the recovery schedule, to ask its provider about. `lease` proves it still holds it
/// when the attempt is recorded.
public struct RecoveryClaim: Sendable, Hashable {
    public var orderId: String
    public var provider: String
    public var reason: RecoveryReason
    /// Attempts made before this one.
    public var attempts: Int
    public var lease: UUID
}

/// One question asked of a provider, and what came of it.
public struct RecoveryAttempt: Sendable, Hashable {
    public var orderId: String
    /// 1 for the first question about the order since it entered the schedule.
    public var attempt: Int
    public var provider: String
    /// Who asked: `serve@host:pid` (the schedule), `cli`, or `token:NAME` (a person through the API).
    public var askedBy: String
    public var askedAt: Date
    public var durationMilliseconds: Int
    public var outcome: RecoveryOutcome
    /// In words: what was asked, what the provider answered, what was recorded.
    public var said: String
    /// The provider's own answer, the first 4 KiB of its body, when it gave one that was not recorded as an event (a
    /// "not paid yet"): what a person reads.
    public var providerWords: String?
    /// The answer as it came, for an auditor (`recovery_attempts.answer`): the body verbatim, the headers that sign
    /// it, and whether its signature was checked on arrival (`verified`).
    public var answer: JSONValue?
    /// The types of the events recorded on the order.
    public var recorded: [String]

    public init(
        orderId: String, attempt: Int, provider: String, askedBy: String, askedAt: Date, durationMilliseconds: Int,
        outcome: RecoveryOutcome, said: String, providerWords: String?, answer: JSONValue? = nil, recorded: [String]
    ) {
        self.orderId = orderId
        self.attempt = attempt
        self.provider = provider
        self.askedBy = askedBy
        self.askedAt = askedAt
        self.durationMilliseconds = durationMilliseconds
        self.outcome = outcome
        self.said = said
        self.providerWords = providerWords
        self.answer = answer
        self.recorded = recorded
    }
}

/// An order on the recovery schedule: why it is there, where it stands, its latest attempts (newest first).
public struct RecoveryEntry: Sendable, Hashable {
    public enum Next: Sendable, Hashable {
        /// Pending: asked again at this time.
        case due(Date)
        /// No more questions: recovered, settled, unrecoverable.
        case ended(RecoveryStatus)
    }

    public var orderId: String
    public var provider: String
    public var reason: RecoveryReason
    public var status: RecoveryStatus
    public var enteredAt: Date
    public var attemptCount: Int
    public var next: Next
    public var endedAt: Date?
    public var attempts: [RecoveryAttempt]
}

/// A provider's history of undelivered notifications, held by this node to sweep from `sweptUntil`, or to go on
/// reading the window at `place`.
public struct RecoverySweepClaim: Sendable, Hashable {
    public var source: String
    public var sweptUntil: Date
    public var lease: UUID
    /// The window a sweep began and did not read to its end (nil: none); the next sweep goes on from it.
    public var place: Place?

    /// Where a sweep stopped inside its window: the window exactly as it was asked (a provider ties its page tokens
    /// to the request) and the token of the next page to read (nil: from the window's first page).
    public struct Place: Sendable, Hashable {
        public var windowStart: Date
        public var windowEnd: Date
        public var nextPageToken: String?

        public init(windowStart: Date, windowEnd: Date, nextPageToken: String?) {
            self.windowStart = windowStart
            self.windowEnd = windowEnd
            self.nextPageToken = nextPageToken
        }
    }

    public init(source: String, sweptUntil: Date, lease: UUID, place: Place? = nil) {
        self.source = source
        self.sweptUntil = sweptUntil
        self.lease = lease
        self.place = place
    }
}
