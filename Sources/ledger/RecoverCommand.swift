import ArgumentParser
import Foundation
import LedgerCore
import LedgerPostgres
import LedgerProviderClients
import LedgerProviders
import Logging

/// `ledger recover --order ID`: asks the order's provider what became of its payment (补单) and records the signed
/// answer, exactly as a delivered notification is recorded: `provider.notified` (actor `provider:app_store`, the
/// answer verbatim as evidence), then what it leads to (`ProviderFollowUp`). Idempotent: asking again records
/// nothing new until the provider's answer changes.
///
/// Asked: the App Store, for an order whose transaction id is known (Get Transaction Info; Production, then Sandbox);
/// Alipay (`alipay.trade.query`) and WeChat Pay (the order query), by our order id. Not yet: the App Store's
/// notification-history sweep (an order known only by its appAccountToken) and the schedule that asks by itself;
/// the command says so rather than guess.
///
/// Exit status: 0 asked and answered; 1 not asked or nothing to record (said why); 69 the provider could not be
/// reached, ask again later; 78 the provider configuration is wrong.
struct RecoverCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "recover",
        abstract: "Ask the order's provider about its payment and record the signed answer (补单).",
        discussion: """
            Needs --providers-config (or LEDGER_PROVIDERS_CONFIG): for the App Store, appStore.trustedRoots (to verify \
            the answer) and appStore.serverAPI (the In-App Purchase key); for Alipay, alipay (Alipay's public key) and \
            alipay.query (the app's private key); for WeChat Pay, wechatPay (platform keys) and wechatPay.query (the \
            merchant's API key and its serial). Exit status: 0 answered, 1 not asked or nothing recorded, 69 \
            provider unreachable (ask again later), 78 configuration error.
            """)

    @Option(name: .customLong("order"), help: "The order to ask about.") var orderId: String
    @Flag(name: .customLong("dry-run"), help: "Ask and verify, print what would be recorded, record nothing.")
    var dryRun = false
    @OptionGroup var database: DatabaseOptions
    @OptionGroup var providers: ProviderOptions

    func run() async throws {
        guard Identifier.isValidOrderId(orderId) else { throw ValidationError("--order: order id " + Identifier.orderRule) }
        let logger = Logger(label: "ledger.recover")
        let (verifiers, clients) = try providers.loadWithClients(logger: logger)
        let questions = ProviderQuestions(clients: clients, verifiers: verifiers, logger: logger)
        let (orderId, dryRun) = (orderId, dryRun)
        let outcome: Recovery = try await database.withLedger { opened in
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
        switch outcome {
        case .answered(let text):
            try StandardOutput.line(text)
        case .notAsked(let text):
            try StandardOutput.line(text)
            throw ExitCode(1)
        case .unreachable(let text):
            try StandardOutput.line(text + "; ask again later")
            throw ExitCode(69)
        case .configuration(let text):
            try? FileHandle.standardError.write(contentsOf: Data("Error: \(text)\n".utf8))
            throw ExitCode(78)
        }
    }

    enum Recovery: Sendable {
        case answered(String)
        case notAsked(String)
        case unreachable(String)
        case configuration(String)
    }
}
