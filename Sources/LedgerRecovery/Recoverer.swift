import Foundation
import LedgerCore
import LedgerPostgres
import LedgerProviderClients
import Logging
import Synchronization

/// Recovers lost orders (补单): asks an order's provider what became of its payment and records the signed answer
/// exactly as a delivered notification is recorded (`Ledger.recordProviderMessage`: `provider.notified`, the answer
/// verbatim as evidence, then its follow-ups). One type for every way of asking — the schedule `serve` runs
/// (`runRound`), `ledger recover` and `POST /v1/orders/{id}/recover` (`askNow`) — so each attempt is held under the
/// schedule's lease and recorded alike, whoever asked.
///
/// Steps of one attempt:
/// 1. take the order on the schedule (`RecoverySchedule.claimDue` / `claim`): no other node asks about it meanwhile;
/// 2. read the order; one the schedule no longer needs (verified, cancelled… meanwhile) is settled unasked;
/// 3. ask its provider (`ProviderQuestions.ask`): only an answer whose signature verifies is believed;
/// 4. record a verified answer (`Ledger.recordProviderMessage`, idempotent by the answer's id);
/// 5. record the attempt and give the order back (`RecoverySchedule.complete`): ended, or due again as `plan` says.
public struct Recoverer: Sendable {
    let database: LedgerDatabase
    let questions: ProviderQuestions
    /// The providers the ledger can ask (their clients are configured): only their orders enter the schedule, and
    /// only their orders' answers say `providerAskable`.
    public let providers: [Provider]
    public let plan: RecoveryPlan
    let clock: @Sendable () -> Date
    let logger: Logger
    /// Apple's notification history, swept every `plan.sweepEvery` when the App Store can be asked: one sweep per
    /// environment the configured app accepts (`AppStoreNotificationSweep.environments`).
    let appStoreSweeps: [AppStoreNotificationSweep]
    private let configurationSaid = Said()
    /// Until when each provider asked not to be asked again (Apple's 429 `Retry-After`): its lane waits meanwhile.
    let pauses = ProviderPauses()
    /// People's questions to each provider, at most `RecoveryPlan.personAsksPerSecond` a second from this node.
    let personAsks = PersonAsks(perSecond: RecoveryPlan.personAsksPerSecond)

    public init(
        database: LedgerDatabase, questions: ProviderQuestions, plan: RecoveryPlan = .standard,
        clock: @escaping @Sendable () -> Date = Date.init, logger: Logger
    ) {
        self.database = database
        self.questions = questions
        self.providers = questions.askable
        self.plan = plan
        self.clock = clock
        self.logger = logger
        self.appStoreSweeps = questions.appStore.map { appStore in
            AppStoreNotificationSweep.environments(for: appStore.api, verifier: appStore.verifier).map { environment in
                AppStoreNotificationSweep(
                    api: appStore.api, verifier: appStore.verifier, database: database, clock: clock, logger: logger,
                    environment: environment)
            }
        } ?? []
    }

    /// Who the schedule's attempts are recorded as asked by: this process.
    public static let thisNode = "serve@\(ProcessInfo.processInfo.hostName):\(ProcessInfo.processInfo.processIdentifier)"

    // MARK: The schedule

    /// One round of the schedule: sweeps Apple's notification history when due, enters the orders that may be lost,
    /// then asks about every due order until none is due. Each provider has a lane of its own, and the lanes run at
    /// once: a provider that hangs or refuses delays only its own orders (40 hanging Apple questions had held Alipay's
    /// and WeChat Pay's back 85 s, batches mixing providers and waiting for their slowest). In a lane, `batch` orders
    /// are asked together, at most `maximumBatches` times. The App Store's lane then asks about the subscriptions
    /// whose renewal went unheard (`askAboutSubscriptions`) and answers Apple's consumption requests
    /// (`answerConsumptionRequests`, when the operator's policy says to). Returns what each order's attempt came to.
    public func runRound(batch: Int = 16, maximumBatches: Int = 64) async throws -> [RecoveryReport] {
        try await sweepIfDue()
        let entered = try await database.recovery.enrol(now: clock(), plan: plan, providers: providers)
        if entered > 0 { logger.info("recovery: \(entered) order(s) entered the schedule") }
        return try await withThrowingTaskGroup(of: [RecoveryReport].self) { lanes in
            for provider in providers {
                lanes.addTask {
                    let reports = try await self.runLane(of: provider, batch: batch, maximumBatches: maximumBatches)
                    if provider == .appStore {
                        try await self.askAboutSubscriptions(batch: batch, maximumBatches: maximumBatches)
                        try await self.answerConsumptionRequests(batch: batch)
                    }
                    return reports
                }
            }
            var reports: [RecoveryReport] = []
            for try await lane in lanes { reports += lane }
            return reports
        }
    }

    /// One provider's due orders, `batch` at a time; none while the provider asked not to be asked (`pauses`).
    private func runLane(of provider: Provider, batch: Int, maximumBatches: Int) async throws -> [RecoveryReport] {
        var reports: [RecoveryReport] = []
        for _ in 0..<maximumBatches {
            if let until = pauses.until(provider), clock() < until { break }
            let claims = try await database.recovery.claimDue(now: clock(), plan: plan, limit: batch, of: provider)
            if claims.isEmpty { break }
            reports += try await withThrowingTaskGroup(of: RecoveryReport.self) { group in
                for claim in claims {
                    group.addTask { try await self.attempt(claim, askedBy: Self.thisNode) }
                }
                var done: [RecoveryReport] = []
                for try await report in group { done.append(report) }
                return done
            }
            if Task.isCancelled { break }
        }
        return reports
    }

    /// Sweeps Apple's notification history of each environment swept, from where the last sweep (of any node) ended
    /// or stopped, when due; returns what each sweep that ran came to. A sweep that fails is logged and tried again on
    /// the next round, from the last page it recorded; what it recorded stays recorded.
    @discardableResult
    public func sweepIfDue() async throws -> [AppStoreServerEnvironment: SweepReport] {
        var reports: [AppStoreServerEnvironment: SweepReport] = [:]
        for sweep in appStoreSweeps {
            if let report = try await sweepIfDue(sweep) { reports[sweep.environment] = report }
        }
        return reports
    }

    /// One environment's sweep: a window begun earlier goes on from its next page (its token kept in the database
    /// after every page), else a new window from a little before where the last one ended, up to now.
    private func sweepIfDue(_ sweep: AppStoreNotificationSweep) async throws -> SweepReport? {
        let now = clock()
        // Apple said when it may be asked again (a 429's `Retry-After`): not before then, by any question.
        if let until = pauses.until(.appStore), now < until { return nil }
        let source = Self.appStoreSweepSource(sweep.environment)
        guard let claim = try await database.recovery.claimSweep(source, now: now, plan: plan) else { return nil }
        let window: RecoverySweepClaim.Place
        if let place = claim.place, sweep.stillKept(place) {
            window = place
        } else if let fresh = sweep.window(from: claim.sweptUntil.addingTimeInterval(-RecoveryPlan.sweepOverlap.seconds), to: now) {
            window = fresh
        } else {
            try await database.recovery.completeSweep(claim, until: now)
            return SweepReport()
        }
        do {
            let report = try await sweep.sweep(window) { next in
                // The window's last page read: nothing to keep, the sweep completes below.
                guard let next else { return true }
                return try await self.database.recovery.keepSweepPlace(claim, next)
            }
            if report.complete {
                try await database.recovery.completeSweep(claim, until: window.windowEnd)
            } else {
                try await database.recovery.releaseSweep(claim)
            }
            if report.recorded > 0 || report.unverified > 0 || !report.complete {
                logger.info("recovery: Apple's \(sweep.environment.rawValue) notification history swept (\(report.pages) page(s)\(report.complete ? "" : ", more next round")): \(report.recorded) recorded, \(report.duplicate) already recorded, \(report.unmatched) matching no order, \(report.unverified) not verified")
            }
            return report
        } catch {
            if case .rateLimited(let until)? = error as? AppStoreServerAPIError { pauses.pause(.appStore, until: until) }
            // A token Apple refuses (4000014: it ties tokens to their request, and they may expire) would be refused
            // every round: the window is begun again from its first page (its notifications are recorded once).
            let refusedToken = window.nextPageToken != nil && Self.isRefusedPaginationToken(error)
            try await database.recovery.releaseSweep(claim, forgettingPlace: refusedToken)
            logger.error("recovery: sweeping Apple's \(sweep.environment.rawValue) notification history failed, tried again next round\(refusedToken ? " from the window's first page" : " from the last page recorded"): \(error)")
            return nil
        }
    }

    /// Apple's 4000014, "the pagination token is invalid" (a 400).
    static func isRefusedPaginationToken(_ error: any Error) -> Bool {
        guard case .unexpected(400, let body)? = error as? AppStoreServerAPIError else { return false }
        return body.contains("4000014")
    }

    /// The row of `recovery_sweeps` that keeps each environment's sweep (Production's kept its name of before).
    static func appStoreSweepSource(_ environment: AppStoreServerEnvironment) -> String {
        environment == .production ? appStoreSweepSource : appStoreSweepSource + ":sandbox"
    }

    static let appStoreSweepSource = "app_store:notification_history"

    /// One claimed order, asked about unless it no longer needs to be.
    func attempt(_ claim: RecoveryClaim, askedBy: String) async throws -> RecoveryReport {
        guard let order = try await database.ledger.order(claim.orderId), RecoveryPlan.mayBeLost(order.state) else {
            try await database.recovery.settle(claim, now: clock())
            return .settled(orderId: claim.orderId)
        }
        return try await ask(order, claim: claim, askedBy: askedBy)
    }

    // MARK: A person's question

    /// Asks now about one order, for a person (`ledger recover`, the API): on the schedule (entered as `asked` if it
    /// was not there), under its lease. With `dryRun`, asks and says what would be recorded, and records nothing.
    /// A person's question uses none of the plan's attempts, and is refused (`tooSoon`) when the order was asked
    /// less than `plan.personAskInterval` ago or this node already sent the provider
    /// `RecoveryPlan.personAsksPerSecond` people's questions in the last second.
    public func askNow(orderId: String, askedBy: String, dryRun: Bool = false) async throws -> RecoveryReport {
        guard let order = try await database.ledger.order(orderId) else { return .unknownOrder(orderId: orderId) }
        // Its provider is not configured for asking here: said, and the order is not entered on the schedule, whose
        // page would say "asked again at …" of a question nobody will ask.
        if !providers.contains(order.provider), case .nothing(.configuration, let said, _, _) = await questions.ask(about: order, now: Date()) {
            return .cannotAsk(orderId: orderId, said: said)
        }
        if dryRun {
            let now = clock()
            if let retryAt = personAsks.take(order.provider, now: now) { return .tooSoon(orderId: orderId, wait: .until(retryAt, from: now)) }
            switch await questions.ask(about: order, now: Date()) {
            case .answered(let message, let said):
                return .dryRun(orderId: orderId, outcome: .recovered,
                               said: "\(said); would record provider.notified (\(message.fact.notificationId)) and what follows")
            case .nothing(let outcome, let said, _, _):
                return .dryRun(orderId: orderId, outcome: outcome, said: said)
            }
        }
        let now = clock(), interval = plan.personAskInterval.seconds
        guard let claim = try await database.recovery.claim(order, now: now, plan: plan, askedNotSince: now.addingTimeInterval(-interval)) else {
            if let last = try await database.recovery.lastAskedAt(orderId), last > now.addingTimeInterval(-interval) {
                return .tooSoon(orderId: orderId, wait: .until(last.addingTimeInterval(interval), from: now))
            }
            return .busy(orderId: orderId)
        }
        if let retryAt = personAsks.take(order.provider, now: now) {
            try await database.recovery.release(claim)
            return .tooSoon(orderId: orderId, wait: .until(retryAt, from: now))
        }
        return try await ask(order, claim: claim, askedBy: askedBy, countsForPlan: false)
    }

    // MARK: Asking and recording

    private func ask(_ order: Order, claim: RecoveryClaim, askedBy: String, countsForPlan: Bool = true) async throws -> RecoveryReport {
        let askedAt = clock()
        let started = ContinuousClock.now
        // Signatures and their freshness are judged by the wall clock; the schedule's clock only says when to ask.
        let answer = await questions.ask(about: order, now: Date())
        let answered = ContinuousClock.now - started
        var (outcome, said, kept, recorded): (RecoveryOutcome, String, JSONValue?, [String])
        var notBefore: Date?
        switch answer {
        case .answered(let message, let answerSaid):
            (outcome, said, recorded) = try await record(message, said: answerSaid, about: order.orderId)
            kept = nil
        case .nothing(let nothing, let nothingSaid, let providerAnswer, let providerNotBefore):
            (outcome, said, kept, recorded, notBefore) = (nothing, nothingSaid, providerAnswer, [], providerNotBefore)
        }
        let words: String? = if case .string(let body)? = kept?["body"] { String(body.utf8.prefix(4096)) } else { nil }
        if let notBefore { pauses.pause(order.provider, until: notBefore) }
        if outcome == .configuration { sayOnce(order.provider, said) }
        let attempt = RecoveryAttempt(
            orderId: order.orderId, attempt: claim.attempts + 1, provider: order.provider.rawValue, askedBy: askedBy,
            askedAt: askedAt, durationMilliseconds: Int(answered.seconds * 1000), outcome: outcome, said: said,
            providerWords: words, answer: kept, recorded: recorded)
        RecoveryMetrics.attempted(attempt, took: answered)
        let next = try await database.recovery.complete(
            claim, attempt: attempt, plan: plan, notBefore: notBefore, countsForPlan: countsForPlan)
        if case .ended(.unrecoverable) = next {
            logger.warning("recovery: order \(order.orderId) is unrecoverable after \(attempt.attempt) attempt(s); finance lists it", metadata: [
                "outcome": "\(outcome.rawValue)", "said": "\(said)",
            ])
        }
        return .asked(attempt, next: next)
    }

    /// Records a verified answer about `orderId` (nil: the order it is recorded on); what came of it, in words.
    /// `recovered` only when the order is no longer one that may be lost: an answer recorded that left it where it was
    /// (not paid yet, a payment the rules did not apply) keeps it on the schedule (`recordedNotApplied`).
    func record(_ message: ProviderMessage, said: String, about orderId: String? = nil) async throws -> (RecoveryOutcome, String, [String]) {
        do {
            switch try await database.ledger.recordProviderMessage(message) {
            case .recorded(let recordedOn, let followed, let refusal):
                let events = ["provider.notified"] + followed.map(\.rawValue)
                let text = "\(said); recorded on order \(recordedOn): \(events.joined(separator: ", "))"
                    + (refusal.map { "; stopped short: \($0.message)" } ?? "")
                guard let state = try await stateIfStillLost(orderId ?? recordedOn) else { return (.recovered, text, events) }
                return (.recordedNotApplied, text + "; the order is still \(state): asked again later", events)
            case .duplicate(let seenOn):
                let text = "\(said); already recorded: the provider's answer has not changed since it was last asked"
                guard let target = orderId ?? seenOn, let state = try await stateIfStillLost(target) else { return (.recovered, text, []) }
                return (.recordedNotApplied, text + "; the order is still \(state): asked again later", [])
            case .unmatched:
                return (.keptNotApplied, "\(said); the answer matches no order: kept for finance as unknown_provider_transaction", [])
            case .refused(_, let field, let reason):
                return (.keptNotApplied, "\(said); kept but not applied (\(field): \(reason)): finance lists it", [])
            }
        } catch let error as UnkeepableProviderMessage {
            return (.keptNotApplied, "\(said); the answer cannot be kept (\(error.field): \(error.message))", [])
        }
    }

    /// The order's state when it may still be lost (`RecoveryPlan.mayBeLost`); nil once it is not.
    private func stateIfStillLost(_ orderId: String) async throws -> String? {
        guard let order = try await database.ledger.order(orderId) else { return "unknown" }
        return RecoveryPlan.mayBeLost(order.state) ? order.state.rawValue : nil
    }

    /// A configuration error is said loudly, once per provider per process: every attempt would say it again.
    private func sayOnce(_ provider: Provider, _ said: String) {
        guard configurationSaid.first(provider.rawValue) else { return }
        logger.error("recovery: \(provider.rawValue) cannot be asked until its configuration is fixed: \(said)")
    }
}

extension Duration {
    /// The time from `now` until `date`, none when it has passed.
    static func until(_ date: Date, from now: Date) -> Duration { .seconds(max(0, date.timeIntervalSince(now))) }
}

/// Until when each provider asked not to be asked again, in this process.
final class ProviderPauses: Sendable {
    private let until = Mutex<[Provider: Date]>([:])

    func pause(_ provider: Provider, until date: Date) {
        until.withLock { $0[provider] = max($0[provider] ?? date, date) }
    }

    func until(_ provider: Provider) -> Date? { until.withLock { $0[provider] } }
}

/// People's questions to each provider from this process: at most `perSecond` in any second (a sliding window), by
/// the recoverer's clock.
final class PersonAsks: Sendable {
    private let perSecond: Int
    private let sent = Mutex<[Provider: [Date]]>([:])

    init(perSecond: Int) {
        self.perSecond = perSecond
    }

    /// Nil when a question to `provider` may be sent at `now` (and counts it); else when one may.
    func take(_ provider: Provider, now: Date) -> Date? {
        sent.withLock { sent in
            var recent = (sent[provider] ?? []).filter { now.timeIntervalSince($0) < 1 && $0 <= now }
            defer { sent[provider] = recent }
            guard recent.count < perSecond else { return recent[0].addingTimeInterval(1) }
            recent.append(now)
            return nil
        }
    }
}

/// What has been said already, by this process.
private final class Said: Sendable {
    private let said = Mutex<Set<String>>([])

    /// True the first time `text` is given.
    func first(_ text: String) -> Bool { said.withLock { $0.insert(text).inserted } }
}

/// What asking about one order came to.
public enum RecoveryReport: Sendable, Hashable {
    /// Asked: the attempt as recorded, and where the order stands on the schedule now.
    case asked(RecoveryAttempt, next: RecoveryEntry.Next)
    /// Not asked: the order moved on by itself since it entered the schedule.
    case settled(orderId: String)
    /// Not asked: another node is asking about it now.
    case busy(orderId: String)
    case unknownOrder(orderId: String)
    /// Asked and not recorded (`--dry-run`): `recovered` is what would have been recorded.
    case dryRun(orderId: String, outcome: RecoveryOutcome, said: String)
    /// Not asked: a person asked about this order, or this node's people asked its provider, too recently; ask again
    /// after `wait`.
    case tooSoon(orderId: String, wait: Duration)
    /// Not asked, and not entered on the schedule: the order's provider is not configured for asking here, in words.
    case cannotAsk(orderId: String, said: String)

    public var orderId: String {
        switch self {
        case .asked(let attempt, _): attempt.orderId
        case .settled(let orderId), .busy(let orderId), .unknownOrder(let orderId), .dryRun(let orderId, _, _),
             .tooSoon(let orderId, _), .cannotAsk(let orderId, _): orderId
        }
    }

    /// What asking came to; nil when the provider was not asked.
    public var outcome: RecoveryOutcome? {
        switch self {
        case .asked(let attempt, _): attempt.outcome
        case .dryRun(_, let outcome, _): outcome
        case .cannotAsk: .configuration
        case .settled, .busy, .unknownOrder, .tooSoon: nil
        }
    }
}
