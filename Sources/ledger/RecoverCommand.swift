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
/// Built so far: the App Store, for an order whose transaction id is known (Get Transaction Info; Production, then
/// Sandbox). Alipay, WeChat Pay, the App Store's notification-history sweep (an order known only by its
/// appAccountToken) and the schedule that asks by itself are not yet: the command says so rather than guess.
///
/// Exit status: 0 asked and answered; 1 not asked or nothing to record (said why); 69 the provider could not be
/// reached, ask again later; 78 the provider configuration is wrong.
struct RecoverCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "recover",
        abstract: "Ask the order's provider about its payment and record the signed answer (补单).",
        discussion: """
            Needs --providers-config (or LEDGER_PROVIDERS_CONFIG) with appStore.trustedRoots (to verify the answer) and \
            appStore.serverAPI (keyId, issuerId, privateKeyPath: the In-App Purchase key). Exit status: 0 answered, \
            1 not asked or nothing recorded, 69 provider unreachable (ask again later), 78 configuration error.
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
        let (orderId, dryRun) = (orderId, dryRun)
        let outcome: Recovery = try await database.withLedger { opened in
            guard let order = try await opened.ledger.order(orderId) else { return .notAsked("the ledger has never seen order \(orderId)") }
            guard order.provider == .appStore else {
                return .notAsked("order \(orderId) is paid with \(order.provider.rawValue): asking it is not built yet (only the App Store is)")
            }
            guard let api = clients.appStore, let verifier = verifiers.appStore else {
                return .configuration("the App Store is not configured for asking: --providers-config needs appStore.trustedRoots and appStore.serverAPI")
            }
            guard let transactionId = order.transactionId else {
                return .notAsked("order \(orderId) has no transaction id yet; Apple is asked by transaction id (finding an order by its appAccountToken, through Apple's notification history, is not built yet)")
            }
            announce("asking the App Store about transaction \(transactionId) of order \(orderId)")
            let signed: String, environment: AppStoreServerEnvironment
            do throws(AppStoreServerAPIError) {
                (signed, environment) = try await api.transactionInfo(transactionId)
            } catch {
                switch error {
                case .configuration: return .configuration(error.description)
                case .unavailable: return .unreachable(error.description)
                default: return .notAsked(error.description)
                }
            }
            let transaction: AppStoreTransaction
            do {
                transaction = try await verifier.verifyTransaction(signed, now: Date())
            } catch {
                logger.warning("security: the App Store's answer did not verify; nothing recorded", metadata: [
                    "order": "\(orderId)", "transaction": "\(transactionId)", "reason": "\(error)",
                ])
                return .notAsked("Apple's answer (\(environment.rawValue)) did not verify: \(error); nothing recorded")
            }
            let message = transaction.queriedMessage
            let fact = message.fact
            let answered = "\(environment.rawValue) answered: \(fact.effect.rawValue), product \(transaction.productId)"
                + (fact.amount.map { ", \($0.formatted)" } ?? "") + ", signed \(RFC3339.format(transaction.signedDate))"
            announce(answered)
            guard !dryRun else { return .answered("dry run: would record provider.notified (\(fact.notificationId)) and what follows; recorded nothing") }
            switch try await opened.ledger.recordProviderMessage(message) {
            case .recorded(let recordedOn, let followed, let refusal):
                let events = (["provider.notified"] + followed.map(\.rawValue)).joined(separator: ", ")
                return .answered("recorded on order \(recordedOn): \(events)" + (refusal.map { "; stopped short: \($0.message)" } ?? ""))
            case .duplicate:
                return .answered("already recorded: Apple's answer has not changed since it was last asked")
            case .unmatched:
                return .notAsked("Apple's answer matches no order; kept for finance as unknown_provider_transaction")
            case .refused(_, let field, let reason):
                return .notAsked("Apple's answer was kept but not applied (\(field): \(reason)); finance lists it")
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
