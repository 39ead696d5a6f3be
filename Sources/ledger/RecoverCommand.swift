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
        let (orderId, dryRun) = (orderId, dryRun)
        let outcome: Recovery = try await database.withLedger { opened in
            guard let order = try await opened.ledger.order(orderId) else { return .notAsked("the ledger has never seen order \(orderId)") }
            let asked: Asked
            switch order.provider {
            case .appStore: asked = await Self.askAppStore(about: order, clients: clients, verifiers: verifiers, logger: logger)
            case .alipay: asked = await Self.askAlipay(about: order, clients: clients, verifiers: verifiers, logger: logger)
            case .wechatPay: asked = await Self.askWeChatPay(about: order, clients: clients, verifiers: verifiers, logger: logger)
            default:
                return .notAsked("order \(orderId) is paid with \(order.provider.rawValue): there is no provider to ask")
            }
            guard case .answered(let message, let said) = asked else {
                if case .not(let outcome) = asked { return outcome }
                return .notAsked("nothing asked")
            }
            announce(said)
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

    /// What asking came to: a verified answer to record (and how to say it), or why there is none.
    enum Asked: Sendable {
        case answered(ProviderMessage, said: String)
        case not(Recovery)
    }

    /// Apple, by the order's transaction id (Get Transaction Info; Production, then Sandbox).
    static func askAppStore(about order: Order, clients: ProviderClients, verifiers: ProviderVerifiers, logger: Logger) async -> Asked {
        guard let api = clients.appStore, let verifier = verifiers.appStore else {
            return .not(.configuration("the App Store is not configured for asking: --providers-config needs appStore.trustedRoots and appStore.serverAPI"))
        }
        guard let transactionId = order.transactionId else {
            return .not(.notAsked("order \(order.orderId) has no transaction id yet; Apple is asked by transaction id (finding an order by its appAccountToken, through Apple's notification history, is not built yet)"))
        }
        announce("asking the App Store about transaction \(transactionId) of order \(order.orderId)")
        let signed: String, environment: AppStoreServerEnvironment
        do throws(AppStoreServerAPIError) {
            (signed, environment) = try await api.transactionInfo(transactionId)
        } catch {
            switch error {
            case .configuration: return .not(.configuration(error.description))
            case .unavailable: return .not(.unreachable(error.description))
            default: return .not(.notAsked(error.description))
            }
        }
        let transaction: AppStoreTransaction
        do {
            transaction = try await verifier.verifyTransaction(signed, now: Date())
        } catch {
            logger.warning("security: the App Store's answer did not verify; nothing recorded", metadata: [
                "order": "\(order.orderId)", "transaction": "\(transactionId)", "reason": "\(error)",
            ])
            return .not(.notAsked("Apple's answer (\(environment.rawValue)) did not verify: \(error); nothing recorded"))
        }
        let message = transaction.queriedMessage
        let said = "\(environment.rawValue) answered: \(message.fact.effect.rawValue), product \(transaction.productId)"
            + (message.fact.amount.map { ", \($0.formatted)" } ?? "") + ", signed \(RFC3339.format(transaction.signedDate))"
        return .answered(message, said: said)
    }

    /// Alipay, by our order id (`alipay.trade.query` with `out_trade_no`).
    static func askAlipay(about order: Order, clients: ProviderClients, verifiers: ProviderVerifiers, logger: Logger) async -> Asked {
        guard let gateway = clients.alipay, let verifier = verifiers.alipay else {
            return .not(.configuration("Alipay is not configured for asking: --providers-config needs alipay (appId, Alipay's public key) and alipay.query"))
        }
        announce("asking Alipay (alipay.trade.query) about order \(order.orderId)")
        let body: [UInt8]
        do throws(ProviderClientError) {
            body = try await gateway.tradeQuery(orderId: order.orderId)
        } catch {
            switch error {
            case .configuration: return .not(.configuration(error.description))
            case .unavailable: return .not(.unreachable("Alipay " + error.description))
            case .unexpected: return .not(.notAsked("Alipay answered " + error.description))
            }
        }
        let answer: AlipayTradeQueryAnswer
        do throws(AlipayVerificationError) {
            answer = try verifier.verifyQueryAnswer(body, orderId: order.orderId)
        } catch {
            if case .queryFailed = error { return .not(.notAsked("Alipay refused the query: \(error)")) }
            logger.warning("security: Alipay's answer did not verify; nothing recorded", metadata: [
                "order": "\(order.orderId)", "reason": "\(error)",
            ])
            return .not(.notAsked("Alipay's answer did not verify: \(error); nothing recorded"))
        }
        guard case .trade(let trade) = answer else {
            return .not(.notAsked("Alipay has no trade for order \(order.orderId) yet (ACQ.TRADE_NOT_EXIST): not paid, or not yet; ask again later"))
        }
        let message = trade.message(receivedAt: Date())
        return .answered(message, said: "Alipay answered: \(trade.tradeStatus.rawValue), trade \(trade.tradeNo), \(trade.totalAmount.formatted)")
    }

    /// WeChat Pay, by our order id (the order query by `out_trade_no`).
    static func askWeChatPay(about order: Order, clients: ProviderClients, verifiers: ProviderVerifiers, logger: Logger) async -> Asked {
        guard let api = clients.wechatPay, let verifier = verifiers.wechatPay else {
            return .not(.configuration("WeChat Pay is not configured for asking: --providers-config needs wechatPay (platform keys) and wechatPay.query"))
        }
        announce("asking WeChat Pay (order query) about order \(order.orderId)")
        let answer: (status: Int, headers: WeChatPayHeaders?, body: [UInt8])
        do throws(ProviderClientError) {
            answer = try await api.queryOrder(order.orderId)
        } catch {
            switch error {
            case .configuration: return .not(.configuration(error.description))
            case .unavailable: return .not(.unreachable("WeChat Pay " + error.description))
            case .unexpected: return .not(.notAsked("WeChat Pay answered " + error.description))
            }
        }
        let verified: WeChatPayQueryAnswer
        do throws(WeChatPayVerificationError) {
            verified = try verifier.verifyQueryAnswer(
                status: answer.status, headers: answer.headers, body: answer.body, orderId: order.orderId, now: Date())
        } catch {
            if case .queryFailed(let status, let code, _) = error {
                // WeChat Pay could not check our signature: the merchant key or its serial is wrong.
                if status == 401 || code == "SIGN_ERROR" { return .not(.configuration("WeChat Pay refused the request: \(error)")) }
                return .not(.notAsked("WeChat Pay refused the query: \(error)"))
            }
            logger.warning("security: WeChat Pay's answer did not verify; nothing recorded", metadata: [
                "order": "\(order.orderId)", "reason": "\(error)",
            ])
            return .not(.notAsked("WeChat Pay's answer did not verify: \(error); nothing recorded"))
        }
        guard case .trade(let trade) = verified else {
            return .not(.notAsked("WeChat Pay has no order \(order.orderId) (ORDER_NOT_EXIST): never placed, or not yet; ask again later"))
        }
        guard let message = trade.message(receivedAt: Date()) else {
            return .not(.notAsked("WeChat Pay answered \(trade.tradeState.rawValue): not paid yet, nothing to record; ask again later"))
        }
        return .answered(message, said: "WeChat Pay answered: \(trade.tradeState.rawValue), transaction \(trade.transactionId ?? "-"), \(trade.amount.formatted)")
    }

    enum Recovery: Sendable {
        case answered(String)
        case notAsked(String)
        case unreachable(String)
        case configuration(String)
    }
}
