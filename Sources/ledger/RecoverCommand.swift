import ArgumentParser
import Foundation
import LedgerCore
import LedgerPostgres
import LedgerProviderClients
import LedgerProviders
import Logging

/// `ledger recover --order ID` (or `--lost`: every order finance lists as lost): asks the order's provider what became of its payment (补单) and records the signed
/// answer, exactly as a delivered notification is recorded: `provider.notified` (actor `provider:app_store`, the
/// answer verbatim as evidence), then what it leads to (`ProviderFollowUp`). Idempotent: asking again records
/// nothing new until the provider's answer changes.
///
/// Asked: the App Store, for an order whose transaction id is known (Get Transaction Info; Production, then Sandbox);
/// Alipay (`alipay.trade.query`) and WeChat Pay (the order query), by our order id. Not yet: the App Store's
/// notification-history sweep (an order known only by its appAccountToken) and the schedule that asks by itself;
/// the command says so rather than guess.
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
    @Flag(name: .customLong("dry-run"), help: "Ask and verify, print what would be recorded, record nothing.")
    var dryRun = false
    @OptionGroup var database: DatabaseOptions
    @OptionGroup var providers: ProviderOptions

    func validate() throws {
        guard (orderId == nil) != !lost else { throw ValidationError("give exactly one of --order ID and --lost") }
        if let orderId, !Identifier.isValidOrderId(orderId) { throw ValidationError("--order: order id " + Identifier.orderRule) }
        if olderThan != nil, !lost { throw ValidationError("--older-than goes with --lost") }
        if let olderThan, ThresholdText.parse(olderThan) == nil { throw ValidationError("--older-than must look like 90s, 10m, 24h") }
    }

    func run() async throws {
        let logger = Logger(label: "ledger.recover")
        let (verifiers, clients) = try providers.loadWithClients(logger: logger)
        let questions = ProviderQuestions(clients: clients, verifiers: verifiers, logger: logger)
        let (orderId, dryRun, threshold) = (orderId, dryRun, olderThan.flatMap(ThresholdText.parse))
        let outcomes: [Recovery] = try await database.withLedger { opened in
            if let orderId { return [try await Self.recover(orderId, opened: opened, questions: questions, dryRun: dryRun)] }
            var outcomes: [Recovery] = []
            var seen = Set<String>()
            var cursor: AnomalyCursor?
            repeat {
                let page = try await opened.finance.anomalies(
                    kinds: Self.lostKinds, olderThan: threshold, limit: 100, after: cursor)
                for anomaly in page.anomalies where seen.insert(anomaly.orderId).inserted {
                    announce("order \(anomaly.orderId) (\(anomaly.kind.rawValue)):")
                    outcomes.append(try await Self.recover(anomaly.orderId, opened: opened, questions: questions, dryRun: dryRun))
                    try Self.say(outcomes[outcomes.count - 1])
                }
                cursor = page.nextCursor
            } while cursor != nil
            if seen.isEmpty { announce("no order is listed as \(Self.lostKinds.map(\.rawValue).joined(separator: " or "))") }
            return outcomes
        }
        if orderId != nil, let outcome = outcomes.first { try Self.say(outcome) }
        // One order: its own status. --lost: a provider that cannot be reached, or a configuration to fix, is the
        // run's status; an order with nothing to record yet is the normal case of a lost order.
        if outcomes.contains(where: { if case .configuration = $0 { true } else { false } }) { throw ExitCode(78) }
        if outcomes.contains(where: { if case .unreachable = $0 { true } else { false } }) { throw ExitCode(69) }
        if orderId != nil, case .notAsked? = outcomes.first { throw ExitCode(1) }
    }

    /// The anomaly kinds whose orders may have been paid without being credited: what `--lost` asks about.
    static let lostKinds: [AnomalyKind] = [.lostOrder, .stuckPayment]

    /// Asks about one order and records a verified answer.
    static func recover(_ orderId: String, opened: LedgerDatabase, questions: ProviderQuestions, dryRun: Bool) async throws -> Recovery {
        guard let order = try await opened.ledger.order(orderId) else { return .notAsked("the ledger has never seen order \(orderId)") }
        announce("asking \(order.provider.rawValue) about order \(orderId)")
        let message: ProviderMessage
        switch await questions.ask(about: order, now: Date()) {
        case .answered(let answer, let said):
            announce(said)
            message = answer
        case .nothingToRecord(let reason): return .notAsked(reason)
        case .unreachable(let reason): return .unreachable(reason)
        case .configuration(let reason): return .configuration(reason)
        }
        guard !dryRun else {
            return .answered("dry run: would record provider.notified (\(message.fact.notificationId)) and what follows; recorded nothing")
        }
        switch try await opened.ledger.recordProviderMessage(message) {
        case .recorded(let recordedOn, let followed, let refusal):
            let events = (["provider.notified"] + followed.map(\.rawValue)).joined(separator: ", ")
            return .answered("recorded on order \(recordedOn): \(events)" + (refusal.map { "; stopped short: \($0.message)" } ?? ""))
        case .duplicate:
            return .answered("already recorded: the provider's answer has not changed since it was last asked")
        case .unmatched:
            return .notAsked("the answer matches no order; kept for finance as unknown_provider_transaction")
        case .refused(_, let field, let reason):
            return .notAsked("the answer was kept but not applied (\(field): \(reason)); finance lists it")
        }
    }

    /// An outcome in words: what was recorded on standard output, a configuration error on standard error.
    static func say(_ outcome: Recovery) throws {
        switch outcome {
        case .answered(let text), .notAsked(let text): try StandardOutput.line(text)
        case .unreachable(let text): try StandardOutput.line(text + "; ask again later")
        case .configuration(let text): try? FileHandle.standardError.write(contentsOf: Data("Error: \(text)\n".utf8))
        }
    }

    enum Recovery: Sendable {
        case answered(String)
        case notAsked(String)
        case unreachable(String)
        case configuration(String)
    }
}
