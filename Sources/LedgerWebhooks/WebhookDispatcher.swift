import Foundation
import LedgerCore
import LedgerPostgres
import Logging
import Synchronization

/// Sends what the queue holds (`Webhooks`), from every node that runs it (`serve`), one endpoint per node at a time:
/// - each endpoint is sent to by a task of its own, so a slow or failing endpoint delays no other (nor any request:
///   this runs beside the server, on the background executor);
/// - within an endpoint, up to `concurrency` streams at once (16), each stream's events one after another: the next is
///   sent only once the receiver acknowledged the one before (`Webhooks.dueDeliveries`);
/// - a failed attempt is tried again by the retry plan (`WebhookRetryPlan`), a `410 Gone` disables the endpoint,
///   and one delivery out of retries marks it failing.
///
/// A batch of due deliveries (up to eight times `concurrency`, one per stream) is sent, then kept in one statement
/// (`Webhooks.keep`). Under a lease (`Webhooks.claimEndpoints`, renewed each batch): a node that dies mid-delivery
/// frees its endpoints when the lease runs out, and the next node sends what was not acknowledged — again, with the
/// same `webhook-id`. Two nodes never send to one endpoint at once.
public final class WebhookDispatcher: Sendable {
    public struct Settings: Sendable {
        /// The whole exchange of one attempt, head and first bytes.
        public var timeout: Duration = .seconds(15)
        public var retries: WebhookRetryPlan = .standard
        public var lease: Duration = .seconds(60)
        /// Streams of one endpoint sent at once (and connections to it).
        public var concurrency = 16
        public var policy: WebhookAddressPolicy = .strict

        public init() {}
    }

    let webhooks: Webhooks
    let consumers: FeedConsumers
    /// This node's committed appends, which start the next round early (`run`).
    let newEvents: NewEvents
    let settings: Settings
    let node: String
    let now: @Sendable () -> Date
    let logger: Logger
    /// The endpoints this node is sending to now.
    private let busy = Mutex<Set<String>>([])
    /// Each endpoint's sender, kept from round to round while `run` runs.
    private let senders = WebhookSenders()

    public init(
        database: LedgerDatabase, settings: Settings, node: String, now: @escaping @Sendable () -> Date = { Date() },
        logger: Logger = Logger(label: "ledger.webhooks")
    ) {
        self.webhooks = database.webhooks
        self.consumers = database.consumers
        self.newEvents = database.ledger.newEvents
        self.settings = settings
        self.node = node
        self.now = now
        self.logger = logger
    }

    /// Until cancelled: every `interval`, queues what the feed holds since the last tick (the feed consumer
    /// `webhooks`, when no other node holds it), takes the endpoints with something due that no node holds, and starts
    /// sending to each, without waiting for one to finish before the next tick. Each endpoint's connections are kept
    /// from one round to the next (`WebhookSenders`).
    ///
    /// An append this node commits starts the next round early (`NewEvents`), though never sooner than
    /// `shortestGap(interval)` after the last one began (25 ms at the default 250): this node's own events go out
    /// within that and a round's sending, where they waited half a tick at the median (167 ms at 200 events a
    /// second). Another node's events are sent about one interval after they were recorded.
    public func run(every interval: Duration) async {
        var observed = ContinuousClock.now - .seconds(60)
        await withDiscardingTaskGroup { group in
            while !Task.isCancelled {
                let started = ContinuousClock.now
                do {
                    // No endpoint, nothing to queue or send: one look a tick, not a walk of the feed.
                    guard try await webhooks.exist() else {
                        try? await Task.sleep(for: interval)
                        continue
                    }
                    _ = try await consumers.run(webhooks.queueing, node: node)
                    await senders.shutDownIdle(at: now(), except: busy.withLock { $0 })
                    for target in try await claim() {
                        group.addTask { _ = await self.deliver(target, keepingItsSender: true) }
                    }
                    if ContinuousClock.now - observed >= Self.observationInterval {
                        observed = .now
                        WebhookMetrics.observe(try await webhooks.list(now: now()), now: now())
                    }
                } catch {
                    logger.error("webhooks: a round failed: \(String(reflecting: error))")
                }
                try? await Task.sleep(until: started + Self.shortestGap(interval))
                await newEvents.wait(atMost: interval - (ContinuousClock.now - started))
            }
        }
        await senders.shutDownAll()
    }

    /// The least time between the starts of two rounds, however many appends ask for one: a tenth of the interval,
    /// at most 100 ms. Under a stream of appends a round's statements (the feed, the claim) then run ten times a tick
    /// at most (and at most ten times a second), not back to back beside the appends.
    static func shortestGap(_ interval: Duration) -> Duration {
        min(interval / 10, .milliseconds(100))
    }

    /// A batch is this many times `concurrency` deliveries: the statements between two batches (keep the outcomes,
    /// find what is due, renew the lease) cost as much as a few rounds of sending.
    static let batchRounds = 8

    /// How often the endpoints' lag is read for the metrics.
    static let observationInterval: Duration = .seconds(5)

    /// One round for tests and `ledger webhooks send`: every endpoint due, each sent to until nothing is due; how
    /// many attempts were made.
    public func deliverDue() async throws -> Int {
        let targets = try await claim()
        return await withTaskGroup(of: Int.self) { group in
            for target in targets { group.addTask { await self.deliver(target, keepingItsSender: false) } }
            return await group.reduce(0, +)
        }
    }

    private func claim() async throws -> [WebhookTarget] {
        let targets = try await webhooks.claimEndpoints(
            node: node, now: now(), lease: settings.lease, except: Array(busy.withLock { $0 }))
        busy.withLock { busy in for target in targets { busy.insert(target.name) } }
        return targets
    }

    /// Sends to `target` until nothing of it is due, it is disabled or failing, or its lease is lost; lets it go
    /// after. Returns how many attempts were made. Its sender is the one kept from the round before when
    /// `keepingItsSender` (the loop), else made for this round and shut down after it.
    func deliver(_ target: WebhookTarget, keepingItsSender: Bool) async -> Int {
        let make = {
            await WebhookSender(
                target: target, policy: self.settings.policy, timeout: self.settings.timeout,
                connections: self.settings.concurrency, node: self.node)
        }
        let sender = keepingItsSender ? await senders.sender(for: target, now: now(), make: make) : await make()
        var attempts = 0
        do {
            sending: while true {
                let due = try await webhooks.dueDeliveries(target, now: now(), limit: settings.concurrency * Self.batchRounds)
                if due.isEmpty { break }
                // Held for the batch: `batchRounds` attempts one after another at most, each within the timeout.
                guard try await webhooks.renew(target, until: now().addingTimeInterval(settings.lease.seconds)) else { break }
                // Up to `concurrency` in flight, the next sent as soon as one is answered; the batch kept at once.
                let outcomes = await withTaskGroup(of: WebhookOutcome.self) { group in
                    var outcomes: [WebhookOutcome] = [], inFlight = 0
                    for delivery in due {
                        if inFlight == settings.concurrency, let outcome = await group.next() {
                            inFlight -= 1
                            outcomes.append(outcome)
                        }
                        group.addTask { await self.attempt(delivery, to: target, by: sender) }
                        inFlight += 1
                    }
                    for await outcome in group { outcomes.append(outcome) }
                    return outcomes
                }
                attempts += outcomes.count
                guard try await webhooks.keep(outcomes, to: target) == outcomes.count else { break sending }
                if outcomes.contains(where: { $0.attempt.outcome == .gone }) {
                    try await webhooks.disableGone(target, now: now())
                    logger.warning("webhook \(target.name): the receiver answered 410 Gone; the endpoint is disabled")
                    break sending
                }
                if outcomes.contains(where: { $0.attempt.outcome != .delivered && $0.next == nil }) {
                    try await webhooks.markFailing(target, now: now())
                    logger.error("webhook \(target.name): a delivery used up its retries; the endpoint is failing (ledger webhooks enable)")
                    break sending
                }
            }
            try await webhooks.release(target)
        } catch {
            logger.error("webhook \(target.name): \(String(reflecting: error))")
        }
        // Free for the next tick before the client's connections are closed: closing took up to a second, and the
        // events queued meanwhile waited for it.
        _ = busy.withLock { $0.remove(target.name) }
        if !keepingItsSender { await sender.shutdown() }
        return attempts
    }

    /// One attempt, and when to try it again.
    private func attempt(_ delivery: WebhookDelivery, to target: WebhookTarget, by sender: WebhookSender) async -> WebhookOutcome {
        let (attempt, retryAfter) = await sender.send(delivery, signedWith: target.secrets, now: now())
        WebhookMetrics.attempted(attempt, endpoint: target.name)
        if attempt.outcome != .delivered {
            logger.notice("webhook \(target.name): \(delivery.messageId) \(attempt.outcome.rawValue) \(attempt.status.map(String.init) ?? "")")
        }
        let next: Date? = switch attempt.outcome {
        case .delivered: nil
        case .gone: attempt.at
        default: settings.retries.nextAttempt(after: delivery.attempts + 1, at: attempt.at, retryAfter: retryAfter)
        }
        return WebhookOutcome(delivery: delivery, attempt: attempt, next: next)
    }
}
