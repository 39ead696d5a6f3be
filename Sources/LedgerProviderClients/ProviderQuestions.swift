import Foundation
import LedgerCore
import LedgerProviders
import Logging

/// What asking a provider about an order came to.
public enum ProviderAnswer: Sendable {
    /// A verified answer to record (`Ledger.recordProviderMessage`), and how to say it to a person.
    case answered(ProviderMessage, said: String)
    /// Asked, or not askable, and nothing to record: not paid yet, unknown to the provider, an answer that did not
    /// verify (logged as a security event), or no way to ask this order. Says why.
    case nothingToRecord(String)
    /// No answer, a 5xx, or still rate limited: ask again later.
    case unreachable(String)
    /// The provider could not check our signature, or the ledger is not configured to ask it: fix the configuration.
    case configuration(String)
}

/// Asks an order's provider about its payment, with the clients and verifiers a providers file enables: the App
/// Store by the order's transaction id (Get Transaction Info; Production, then Sandbox); Alipay
/// (`alipay.trade.query`) and WeChat Pay (the order query) by our order id. Only an answer whose provider signature
/// verifies becomes a message to record. Shared by `ledger recover`, and by the schedule that will ask by itself.
public struct ProviderQuestions: Sendable {
    let clients: ProviderClients
    let verifiers: ProviderVerifiers
    let logger: Logger

    public init(clients: ProviderClients, verifiers: ProviderVerifiers, logger: Logger) {
        self.clients = clients
        self.verifiers = verifiers
        self.logger = logger
    }

    public func ask(about order: Order, now: Date) async -> ProviderAnswer {
        switch order.provider {
        case .appStore: await askAppStore(about: order, now: now)
        case .alipay: await askAlipay(about: order, now: now)
        case .wechatPay: await askWeChatPay(about: order, now: now)
        default: .nothingToRecord("order \(order.orderId) is paid with \(order.provider.rawValue): there is no provider to ask")
        }
    }

    /// Apple, by the order's transaction id (Get Transaction Info; Production, then Sandbox).
    func askAppStore(about order: Order, now: Date) async -> ProviderAnswer {
        guard let api = clients.appStore, let verifier = verifiers.appStore else {
            return .configuration("the App Store is not configured for asking: --providers-config needs appStore.trustedRoots and appStore.serverAPI")
        }
        guard let transactionId = order.transactionId else {
            return .nothingToRecord("order \(order.orderId) has no transaction id yet; Apple is asked by transaction id (finding an order by its appAccountToken, through Apple's notification history, is not built yet)")
        }
        let signed: String, environment: AppStoreServerEnvironment
        do throws(AppStoreServerAPIError) {
            (signed, environment) = try await api.transactionInfo(transactionId)
        } catch {
            switch error {
            case .configuration: return .configuration(error.description)
            case .unavailable: return .unreachable(error.description)
            default: return .nothingToRecord(error.description)
            }
        }
        let transaction: AppStoreTransaction
        do {
            transaction = try await verifier.verifyTransaction(signed, now: now)
        } catch {
            logger.warning("security: the App Store's answer did not verify; nothing recorded", metadata: [
                "order": "\(order.orderId)", "transaction": "\(transactionId)", "reason": "\(error)",
            ])
            return .nothingToRecord("Apple's answer (\(environment.rawValue)) did not verify: \(error); nothing recorded")
        }
        let message = transaction.queriedMessage
        let said = "\(environment.rawValue) answered: \(message.fact.effect.rawValue), product \(transaction.productId)"
            + (message.fact.amount.map { ", \($0.formatted)" } ?? "") + ", signed \(RFC3339.format(transaction.signedDate))"
        return .answered(message, said: said)
    }

    /// Alipay, by our order id (`alipay.trade.query` with `out_trade_no`).
    func askAlipay(about order: Order, now: Date) async -> ProviderAnswer {
        guard let gateway = clients.alipay, let verifier = verifiers.alipay else {
            return .configuration("Alipay is not configured for asking: --providers-config needs alipay (appId, Alipay's public key) and alipay.query")
        }
        let body: [UInt8]
        do throws(ProviderClientError) {
            body = try await gateway.tradeQuery(orderId: order.orderId)
        } catch {
            switch error {
            case .configuration: return .configuration(error.description)
            case .unavailable: return .unreachable("Alipay " + error.description)
            case .unexpected: return .nothingToRecord("Alipay answered " + error.description)
            }
        }
        let answer: AlipayTradeQueryAnswer
        do throws(AlipayVerificationError) {
            answer = try verifier.verifyQueryAnswer(body, orderId: order.orderId)
        } catch {
            if case .queryFailed = error { return .nothingToRecord("Alipay refused the query: \(error)") }
            logger.warning("security: Alipay's answer did not verify; nothing recorded", metadata: [
                "order": "\(order.orderId)", "reason": "\(error)",
            ])
            return .nothingToRecord("Alipay's answer did not verify: \(error); nothing recorded")
        }
        guard case .trade(let trade) = answer else {
            return .nothingToRecord("Alipay has no trade for order \(order.orderId) yet (ACQ.TRADE_NOT_EXIST): not paid, or not yet; ask again later")
        }
        let message = trade.message(receivedAt: now)
        return .answered(message, said: "Alipay answered: \(trade.tradeStatus.rawValue), trade \(trade.tradeNo), \(trade.totalAmount.formatted)")
    }

    /// WeChat Pay, by our order id (the order query by `out_trade_no`).
    func askWeChatPay(about order: Order, now: Date) async -> ProviderAnswer {
        guard let api = clients.wechatPay, let verifier = verifiers.wechatPay else {
            return .configuration("WeChat Pay is not configured for asking: --providers-config needs wechatPay (platform keys) and wechatPay.query")
        }
        let answer: (status: Int, headers: WeChatPayHeaders?, body: [UInt8])
        do throws(ProviderClientError) {
            answer = try await api.queryOrder(order.orderId)
        } catch {
            switch error {
            case .configuration: return .configuration(error.description)
            case .unavailable: return .unreachable("WeChat Pay " + error.description)
            case .unexpected: return .nothingToRecord("WeChat Pay answered " + error.description)
            }
        }
        let verified: WeChatPayQueryAnswer
        do throws(WeChatPayVerificationError) {
            verified = try verifier.verifyQueryAnswer(
                status: answer.status, headers: answer.headers, body: answer.body, orderId: order.orderId, now: now)
        } catch {
            if case .queryFailed(let status, let code, _) = error {
                // WeChat Pay could not check our signature: the merchant key or its serial is wrong.
                if status == 401 || code == "SIGN_ERROR" { return .configuration("WeChat Pay refused the request: \(error)") }
                return .nothingToRecord("WeChat Pay refused the query: \(error)")
            }
            logger.warning("security: WeChat Pay's answer did not verify; nothing recorded", metadata: [
                "order": "\(order.orderId)", "reason": "\(error)",
            ])
            return .nothingToRecord("WeChat Pay's answer did not verify: \(error); nothing recorded")
        }
        guard case .trade(let trade) = verified else {
            return .nothingToRecord("WeChat Pay has no order \(order.orderId) (ORDER_NOT_EXIST): never placed, or not yet; ask again later")
        }
        guard let message = trade.message(receivedAt: now) else {
            return .nothingToRecord("WeChat Pay answered \(trade.tradeState.rawValue): not paid yet, nothing to record; ask again later")
        }
        return .answered(message, said: "WeChat Pay answered: \(trade.tradeState.rawValue), transaction \(trade.transactionId ?? "-"), \(trade.amount.formatted)")
    }
}
