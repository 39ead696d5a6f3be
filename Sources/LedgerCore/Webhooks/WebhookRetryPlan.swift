import Foundation

/// When a webhook delivery that failed is tried again (README, "Webhooks"): 5 s, 30 s, 2 min, 10 min, 30 min, 1 h,
/// 2 h, 4 h, 8 h, then every 12 h — fifteen attempts over about three days (75 h 43 min of waits) — each wait drawn
/// at random within ±20 % (jitter, so receivers that failed together are not all tried again together), and never
/// sooner than the receiver's own `Retry-After`. After the last attempt the endpoint is marked failing and its
/// deliveries wait, kept, for an operator to enable it again (or replay them).
public struct WebhookRetryPlan: Sendable, Hashable {
    /// The wait after each failed attempt, by its number (the first attempt is number 1); its count is the number of
    /// retries.
    public var waits: [Duration]
    /// How far a wait may be moved either way, as a fraction of it.
    public var jitter: Double

    public static let standard = WebhookRetryPlan(
        waits: [.seconds(5), .seconds(30), .seconds(120), .seconds(600), .seconds(1_800), .seconds(3_600), .seconds(7_200),
                .seconds(14_400), .seconds(28_800)] + Array(repeating: .seconds(43_200), count: 5),
        jitter: 0.2)

    public init(waits: [Duration], jitter: Double) {
        self.waits = waits
        self.jitter = jitter
    }

    /// When to try again after failed attempt number `attempt` (1 for the first) at `now`; nil when it was the last.
    /// `retryAfter` (the receiver's `Retry-After`, in seconds) lengthens the wait, up to the plan's longest wait;
    /// `random` draws the jitter in [-1, 1] (a test passes its own).
    public func nextAttempt(
        after attempt: Int, at now: Date, retryAfter: Duration? = nil, random: () -> Double = { Double.random(in: -1...1) }
    ) -> Date? {
        guard attempt >= 1, attempt <= waits.count else { return nil }
        let planned = waits[attempt - 1].seconds * (1 + jitter * min(1, max(-1, random())))
        let longest = waits.map(\.seconds).max() ?? 0
        let asked = min(retryAfter?.seconds ?? 0, longest)
        return now.addingTimeInterval(max(planned, asked))
    }
}
