import Foundation

/// When the ledger asks a provider about an order that may be lost (补单), and when it stops asking. Pure: the
/// schedule (`LedgerRecovery`) keeps the rows, this says what they mean.
///
/// An order enters when the rules say it may be lost — a receipt not verified after `receiptUnverifiedAfter`, a
/// retryable verification failure as long, a queued payment with nothing after `paymentUnansweredAfter` — and is
/// asked at once. Each attempt that gets no answer to record waits the next of `delays`: WeChat Pay's own notification
/// retry schedule (15 s, 15 s, 30 s, 3 m, 10 m, 20 m, 30 m, 30 m, 30 m, 60 m, 3 h, 3 h, 3 h, 6 h, 6 h: about 24 hours
/// in all), the providers' own judgement of how long a payment may take to settle. After the last, the order is
/// `unrecoverable` and finance lists it with the last outcome.
public struct RecoveryPlan: Sendable, Hashable {
    public var delays: [Duration]
    public var receiptUnverifiedAfter: Duration
    public var paymentUnansweredAfter: Duration
    /// How long a node holds an order it is asking about. Longer than the longest question (App Store: 30 s timeouts,
    /// `Retry-After` waits, Production then Sandbox); a node killed mid-attempt frees its orders when this runs out.
    public var lease: Duration
    /// How often a provider's history of undelivered notifications is swept (Apple's notification history), and how
    /// far back the first sweep reaches: Apple retries a notification for about three days, so what it still holds
    /// as failed after that is in its history only.
    public var sweepEvery: Duration
    public var firstSweepReach: Duration
    /// A person's question through the API (`POST /v1/orders/{id}/recover`, the console) about an order asked less
    /// than this long ago, by anyone, is refused, to be asked again then (HTTP 429, `Retry-After`): a support tool in
    /// a loop asked 3 times a second (`serve --recovery-person-interval`; zero for `ledger recover`, an operator's
    /// deliberate command). A person's question never counts toward the plan: the schedule's next attempt comes no
    /// sooner than this after it, and the plan's attempts are not used up (16 asks in 5 s had ended an order
    /// `unrecoverable`).
    public var personAskInterval: Duration
    /// Subscriptions: how long after the end of the last period the ledger knows of, with nothing heard since, the
    /// provider is asked (Apple renews up to a day before a period ends and notifies at once: an hour of silence past
    /// the end means a notification was lost or is late).
    public var renewalSilence: Duration
    /// The waits between questions about one subscription whose answer brought no news (billing retried, an answer
    /// that did not verify, no answer); the last repeats until `subscriptionReach`.
    public var subscriptionDelays: [Duration]
    /// How long after a period's end the ledger still asks about it: Apple retries a failed renewal for up to 60 days.
    public var subscriptionReach: Duration

    public init(
        delays: [Duration], receiptUnverifiedAfter: Duration, paymentUnansweredAfter: Duration, lease: Duration,
        sweepEvery: Duration, firstSweepReach: Duration, personAskInterval: Duration = .seconds(10),
        renewalSilence: Duration = .seconds(3_600),
        subscriptionDelays: [Duration] = [3_600, 10_800, 21_600, 43_200, 86_400].map { .seconds($0) },
        subscriptionReach: Duration = .seconds(61 * 86_400)
    ) {
        self.renewalSilence = renewalSilence
        self.subscriptionDelays = subscriptionDelays
        self.subscriptionReach = subscriptionReach
        self.delays = delays
        self.receiptUnverifiedAfter = receiptUnverifiedAfter
        self.paymentUnansweredAfter = paymentUnansweredAfter
        self.lease = lease
        self.sweepEvery = sweepEvery
        self.firstSweepReach = firstSweepReach
        self.personAskInterval = personAskInterval
    }

    public static let standard = RecoveryPlan(
        delays: [15, 15, 30, 180, 600, 1200, 1800, 1800, 1800, 3600, 10_800, 10_800, 10_800, 21_600, 21_600].map { .seconds($0) },
        receiptUnverifiedAfter: .seconds(60), paymentUnansweredAfter: .seconds(600), lease: .seconds(600),
        sweepEvery: .seconds(600), firstSweepReach: .seconds(4 * 86_400))

    /// How far a sweep reaches back before where the last one ended: a notification Apple recorded as failed just
    /// before the last sweep's end may have reached its history after that sweep asked.
    public static let sweepOverlap: Duration = .seconds(300)

    /// People's questions one node sends each provider, at most, per second (Apple's lookups allow 10 per second
    /// for the whole app; three nodes stay within it).
    public static let personAsksPerSecond = 3

    /// The states in which an order may have been paid and not heard of: what the schedule asks about. Any other
    /// state is settled (verified, granted…) or closed (cancelled, rejected) without the provider's help.
    public static func mayBeLost(_ state: OrderState) -> Bool {
        [.paymentQueued, .receiptReceived, .verificationFailed].contains(state)
    }

    /// When to ask about a subscription again after `attempts` questions whose answers brought no news, the last at
    /// `now`.
    public func nextSubscriptionQuestion(afterAttempts attempts: Int, at now: Date) -> Date {
        guard let last = subscriptionDelays.last else { return now }
        let delay = attempts >= 1 && attempts <= subscriptionDelays.count ? subscriptionDelays[attempts - 1] : last
        return now.addingTimeInterval(delay.seconds)
    }

    /// Attempts in all before an order is unrecoverable: the first, then one after each delay.
    public var maximumAttempts: Int { delays.count + 1 }

    /// When to ask again after `attempts` attempts ended without an answer to record, the last at `now`; nil when the
    /// schedule is spent.
    public func nextAttempt(afterAttempts attempts: Int, at now: Date) -> Date? {
        guard attempts >= 1, attempts <= delays.count else { return nil }
        return now.addingTimeInterval(delays[attempts - 1].seconds)
    }
}

/// Why an order is on the recovery schedule.
public enum RecoveryReason: String, Sendable, Hashable, CaseIterable {
    /// A receipt came and was not verified within `receiptUnverifiedAfter`.
    case receiptUnverified = "receipt_unverified"
    /// Verification failed with a retryable error, and nothing since.
    case verificationRetryable = "verification_retryable"
    /// Payment queued, nothing after `paymentUnansweredAfter`.
    case paymentUnanswered = "payment_unanswered"
    /// Someone asked (`ledger recover`, `POST /v1/orders/{id}/recover`).
    case asked
}

/// Where an order stands on the schedule.
public enum RecoveryStatus: String, Sendable, Hashable, CaseIterable {
    /// It will be asked about at its next attempt time.
    case pending
    /// The provider answered and its signed answer is recorded on the order.
    case recovered
    /// The order moved on without the schedule (a receipt verified, a notification came): nothing left to ask.
    case settled
    /// The schedule is spent, or the provider's answer cannot be applied: finance lists it (`unrecoverable`).
    case unrecoverable
}

/// What one attempt came to.
public enum RecoveryOutcome: String, Sendable, Hashable, CaseIterable {
    /// The provider's verified answer was recorded (or had already been: its answer has not changed), and the order
    /// is no longer one that may be lost.
    case recovered
    /// The provider's verified answer was recorded as evidence, but the order is still one that may be lost: not paid
    /// yet (Alipay's `WAIT_BUYER_PAY`), or a payment the rules did not apply (another amount, product, environment or
    /// transaction: finance lists it). The schedule asks again: a buyer who pays later is still found.
    case recordedNotApplied = "recorded_not_applied"
    /// The provider answered: no payment yet (not paid, unknown to it, still paying).
    case notYet = "not_yet"
    /// There is no way to ask about this order yet (an App Store order without a transaction id waits for Apple's
    /// notification history; a receipt with no in-app purchase in it).
    case notAskable = "not_askable"
    /// An answer came whose signature did not verify: nothing recorded, a security log line.
    case unverified
    /// No answer, a 5xx, still rate limited.
    case unreachable
    /// The provider refused the question for good: an id it says is not valid, an account it does not know. Asking
    /// again gets the same answer, so the order is `unrecoverable` at once (Apple's 4000006, 4040001 had been asked
    /// again for 24 hours).
    case refused
    /// The provider refused our credentials, or the ledger is not configured to ask it.
    case configuration
    /// The provider answered with a fact the ledger kept but could not apply (another amount, an unmatched id, a
    /// value the rules refuse): finance lists it; asking again would get the same answer.
    case keptNotApplied = "kept_not_applied"

    /// Whether the schedule ends with this outcome, and how.
    public var endsSchedule: RecoveryStatus? {
        switch self {
        case .recovered: .recovered
        case .keptNotApplied, .refused: .unrecoverable
        case .recordedNotApplied, .notYet, .notAskable, .unverified, .unreachable, .configuration: nil
        }
    }
}

extension Duration {
    /// The duration in seconds, fractions included.
    public var seconds: TimeInterval {
        TimeInterval(components.seconds) + TimeInterval(components.attoseconds) / 1e18
    }
}
