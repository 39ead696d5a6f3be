import ArgumentParser
import Foundation
import LedgerCore
import LedgerPostgres
import LedgerProviderClients
import LedgerProviders
import LedgerRecovery
import Logging

/// `ledger recover --order ID` (or `--lost`: every order finance lists as lost): asks the order's provider what
/// became of its payment (补单) now, and records the signed answer exactly as a delivered notification is recorded:
/// `provider.notified` (actor `provider:app_store`, the answer verbatim as evidence), then what it leads to
/// (`ProviderFollowUp`). Idempotent: asking again records nothing new until the provider's answer changes. The
/// question is an attempt on the recovery schedule (`Recoverer.askNow`): recorded with the others, never asked while
/// a `serve` node is asking about the same order, and an order not answered stays on the schedule, which `serve`
/// asks again by itself (`--recovery-interval`).
///
/// Asked: the App Store, for an order whose transaction id is known (Get Transaction Info; Production, then Sandbox);
/// Alipay (`alipay.trade.query`) and WeChat Pay (the order query), by our order id.
///
/// Exit status: 0 asked and answered (with `--lost`: every order asked, whatever it answered); 1 one order not asked
/// or nothing to record (said why); 69 a provider could not be reached, ask again later; 78 a provider's
/// configuration is wrong.
struct RecoverCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "recover",
        abstract: "Ask the order's provider about its payment and record the signed answer (补单).",
        discussion: """
            Needs --providers-config (or LEDGER_PROVIDERS_CONFIG): for the App Store, appStore.trustedRoots (to verify \
            the answer) and appStore.serverAPI (the In-App Purchase key); for Alipay, alipay (Alipay's public key) and \
            alipay.query (the app's private key); for WeChat Pay, wechatPay (platform keys) and wechatPay.query (the \
            merchant's API key and its serial). --lost asks about every order listed as lost_order or stuck_payment. \
            Exit status: 0 answered (--lost: every order asked), 1 not asked or nothing recorded, 69 a provider \
            unreachable (ask again later), 78 configuration error.
            """)

    @Option(name: .customLong("order"), help: "The order to ask about.") var orderId: String?
    @Flag(help: "Ask about every order finance lists as lost_order or stuck_payment (paid, or maybe paid, and not credited).")
    var lost = false
    @Option(name: .customLong("older-than"), help: "With --lost: override the kinds' thresholds (lost_order 10m, stuck_payment 24h), e.g. 90s, 10m.")
    var olderThan: String?
    @Option(name: .customLong("apple-order-id"), help: "The order id on the customer's receipt from Apple (e.g. MK5TTTR3KP): its transactions are looked up, verified and recorded on their orders.")
    var appleOrderId: String?
    @Flag(name: .customLong("dry-run"), help: "Ask and verify, print what would be recorded, record nothing.")
    var dryRun = false
    @OptionGroup var database: DatabaseOptions
    @OptionGroup var providers: ProviderOptions

    func validate() throws {
        guard [orderId != nil, lost, appleOrderId != nil].filter({ $0 }).count == 1 else {
            throw ValidationError("give exactly one of --order ID, --lost and --apple-order-id ID")
        }
        if appleOrderId != nil, dryRun { throw ValidationError("--dry-run goes with --order or --lost") }
        if let orderId, !Identifier.isValidOrderId(orderId) { throw ValidationError("--order: order id " + Identifier.orderRule) }
        if olderThan != nil, !lost { throw ValidationError("--older-than goes with --lost") }
        if let olderThan, ThresholdText.parse(olderThan) == nil { throw ValidationError("--older-than must look like 90s, 10m, 24h") }
    }

    func run() async throws {
        let logger = Logger(label: "ledger.recover")
        let (_, questions) = try providers.loadWithQuestions(logger: logger)
        let (orderId, dryRun, threshold) = (orderId, dryRun, olderThan.flatMap(ThresholdText.parse))
        if let appleOrderId {
            let lookup = try await database.withLedger { opened in
                try await Recoverer(database: opened, questions: questions, plan: Self.operatorPlan, logger: logger)
                    .lookUpAppleOrder(appleOrderId)
            }
            return try Self.say(lookup, appleOrderId: appleOrderId)
        }
        let reports: [RecoveryReport] = try await database.withLedger { opened in
            let recoverer = Recoverer(database: opened, questions: questions, plan: Self.operatorPlan, logger: logger)
            if let orderId { return [try await Self.recover(orderId, recoverer: recoverer, dryRun: dryRun)] }
            var reports: [RecoveryReport] = []
            var seen = Set<String>()
            var cursor: AnomalyCursor?
            repeat {
                let page = try await opened.finance.anomalies(
                    kinds: Self.lostKinds, olderThan: threshold, limit: 100, after: cursor)
                for anomaly in page.anomalies where seen.insert(anomaly.orderId).inserted {
                    announce("order \(anomaly.orderId) (\(anomaly.kind.rawValue)):")
                    let report = try await Self.recover(anomaly.orderId, recoverer: recoverer, dryRun: dryRun)
                    try Self.say(report)
                    reports.append(report)
                }
                cursor = page.nextCursor
            } while cursor != nil
            if seen.isEmpty { announce("no order is listed as \(Self.lostKinds.map(\.rawValue).joined(separator: " or "))") }
            return reports
        }
        if orderId != nil, let report = reports.first { try Self.say(report) }
        // One order: its own status. --lost: a provider that cannot be reached, or a configuration to fix, is the
        // run's status; an order with nothing to record yet is the normal case of a lost order.
        let outcomes = reports.compactMap(\.outcome)
        if outcomes.contains(.configuration) { throw ExitCode(78) }
        if outcomes.contains(.unreachable) { throw ExitCode(69) }
        if orderId != nil, case .tooSoon? = reports.first { throw ExitCode(75) }
        if orderId != nil, reports.first?.outcome != .recovered { throw ExitCode(1) }
    }

    /// The anomaly kinds whose orders may have been paid without being credited: what `--lost` asks about.
    static let lostKinds: [AnomalyKind] = [.lostOrder, .stuckPayment]

    /// An operator at a shell asks deliberately: no rest between questions about one order (the API's support tools
    /// have one, `RecoveryPlan.personAskInterval`); the pace per provider still holds.
    static var operatorPlan: RecoveryPlan {
        var plan = RecoveryPlan.standard
        plan.personAskInterval = .zero
        return plan
    }

    /// Asks about one order, saying first whom it asks. People's questions to one provider are paced
    /// (`RecoveryPlan.personAsksPerSecond`): `--lost` waits its turn, at most a second, rather than skip an order.
    static func recover(_ orderId: String, recoverer: Recoverer, dryRun: Bool) async throws -> RecoveryReport {
        announce("asking the provider of order \(orderId)")
        while true {
            let report = try await recoverer.askNow(orderId: orderId, askedBy: "cli", dryRun: dryRun)
            guard case .tooSoon(_, let wait) = report, wait <= .seconds(1) else { return report }
            try await Task.sleep(for: max(wait, .milliseconds(10)))
        }
    }

    /// Apple's order lookup in words, one line per transaction; exit 1 when Apple knows no such order, 69 when it did
    /// not answer, 78 on a configuration error.
    static func say(_ lookup: AppleOrderLookup, appleOrderId: String) throws {
        switch lookup {
        case .found(let transactions):
            for transaction in transactions {
                try StandardOutput.line("\(transaction.outcome.rawValue): \(transaction.said)"
                    + (transaction.orderId.map { " (order \($0))" } ?? ""))
            }
        case .invalid:
            try StandardOutput.line("Apple knows no order \(appleOrderId) for this app")
            throw ExitCode(1)
        case .notAsked(let reason, let configuration):
            try? FileHandle.standardError.write(contentsOf: Data("Error: \(reason)\n".utf8))
            throw ExitCode(configuration ? 78 : 69)
        case .tooSoon(let wait):
            try StandardOutput.line("too many questions to Apple from this node: ask again in \(Int(wait.seconds.rounded(.up))) s")
            throw ExitCode(75)
        }
    }

    /// A report in words: what was asked, answered and recorded on standard output; a configuration error on
    /// standard error.
    static func say(_ report: RecoveryReport) throws {
        switch report {
        case .asked(let attempt, let next):
            if attempt.outcome == .configuration {
                try? FileHandle.standardError.write(contentsOf: Data("Error: \(attempt.said)\n".utf8))
                return
            }
            let when: String = switch next {
            case .due(let date): "; asked again at \(RFC3339.format(date)) unless it is answered first"
            case .ended(.unrecoverable): "; the schedule gives up: finance lists it as unrecoverable"
            case .ended: ""
            }
            try StandardOutput.line("\(attempt.outcome.rawValue): \(attempt.said)" + (attempt.outcome == .unreachable ? "; ask again later" : "") + when)
        case .dryRun(_, let outcome, let said):
            if outcome == .configuration {
                try? FileHandle.standardError.write(contentsOf: Data("Error: \(said)\n".utf8))
                return
            }
            try StandardOutput.line("dry run: \(outcome.rawValue): \(said); recorded nothing")
        case .settled(let orderId): try StandardOutput.line("order \(orderId) no longer needs asking")
        case .busy(let orderId): try StandardOutput.line("another node is asking about order \(orderId) now; its answer will be on the order")
        case .unknownOrder(let orderId): try StandardOutput.line("the ledger has never seen order \(orderId)")
        case .cannotAsk(_, let said):
            try? FileHandle.standardError.write(contentsOf: Data("Error: \(said); nothing entered on the recovery schedule\n".utf8))
        case .tooSoon(let orderId, let wait):
            try StandardOutput.line("order \(orderId) was asked about moments ago: ask again in \(Int(wait.seconds.rounded(.up))) s")
        }
    }
}
