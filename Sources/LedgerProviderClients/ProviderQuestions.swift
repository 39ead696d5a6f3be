import Foundation
import LedgerCore
import LedgerProviders
import Logging

/// What asking a provider about an order came to.
public enum ProviderAnswer: Sendable {
    /// A verified answer to record (`Ledger.recordProviderMessage`), and how to say it to a person.
    case answered(ProviderMessage, said: String)
    /// Nothing to record, and why (`outcome`: not paid yet, no way to ask, an answer that did not verify — logged as a
    /// security event —, no answer, a configuration to fix), in words; `answer` is the provider's answer as it came
    /// (`KeptAnswer`), when it gave one; `notBefore`, the time the provider said it may be asked again (Apple's
    /// `Retry-After`).
    case nothing(RecoveryOutcome, said: String, answer: JSONValue? = nil, notBefore: Date? = nil)

    static func notYet(_ said: String, answer: JSONValue? = nil) -> ProviderAnswer { .nothing(.notYet, said: said, answer: answer) }
    static func notAskable(_ said: String) -> ProviderAnswer { .nothing(.notAskable, said: said) }
    static func unverified(_ said: String, answer: JSONValue? = nil) -> ProviderAnswer { .nothing(.unverified, said: said, answer: answer) }
    static func unreachable(_ said: String, answer: JSONValue? = nil) -> ProviderAnswer { .nothing(.unreachable, said: said, answer: answer) }
    static func configuration(_ said: String, answer: JSONValue? = nil) -> ProviderAnswer {
        .nothing(.configuration, said: said, answer: answer)
    }
    static func refused(_ said: String) -> ProviderAnswer { .nothing(.refused, said: said) }
}

/// Asks an order's provider about its payment, with the clients and verifiers a providers file enables: the App
/// Store by the order's transaction id (Get Transaction Info; Production, then Sandbox); Alipay
/// (`alipay.trade.query`) and WeChat Pay (the order query) by our order id. Only an answer whose provider signature
/// verifies becomes a message to record. Shared by every way of asking (`LedgerRecovery`).
public struct ProviderQuestions: Sendable {
    let clients: ProviderClients
    let verifiers: ProviderVerifiers
    let logger: Logger

    public init(clients: ProviderClients, verifiers: ProviderVerifiers, logger: Logger) {
        self.clients = clients
        self.verifiers = verifiers
        self.logger = logger
    }

    /// The providers that can be asked: a client and a verifier for its answers are both configured.
    public var askable: [Provider] {
        (clients.appStore != nil && verifiers.appStore != nil ? [.appStore] : [])
            + (clients.alipay != nil && verifiers.alipay != nil ? [.alipay] : [])
            + (clients.wechatPay != nil && verifiers.wechatPay != nil ? [.wechatPay] : [])
    }

    /// The App Store Server API and the verifier of what it signs, when both are configured: what sweeping Apple's
    /// notification history needs.
    public var appStore: (api: AppStoreServerAPI, verifier: AppStoreJWSVerifier)? {
        guard let api = clients.appStore, let verifier = verifiers.appStore else { return nil }
        return (api, verifier)
    }

    /// How Apple's `CONSUMPTION_REQUEST` is answered, when the providers file says to (and the App Store can be
    /// asked); nil: never.
    public var consumptionAnswers: ConsumptionAnswerPolicy? { appStore == nil ? nil : clients.consumptionAnswers }

    public func ask(about order: Order, now: Date) async -> ProviderAnswer {
        switch order.provider {
        case .appStore: await askAppStore(about: order, now: now)
        case .alipay: await askAlipay(about: order, now: now)
        case .wechatPay: await askWeChatPay(about: order, now: now)
        case .other: .notAskable("order \(order.orderId) is paid with \(order.provider.rawValue): there is no provider to ask")
        }
    }

    /// Alipay's sub-codes that mean our request itself is wrong (its signature, the app id, the key's rights).
    static let alipayConfigurationCodes = ["invalid-signature", "missing-signature", "invalid-app-id", "insufficient-isv-permissions"]

    /// WeChat Pay's error codes that mean our request itself is wrong: a signature it could not check, a request
    /// breaking APIv3's rules (a missing `User-Agent` or `Accept`), a bad parameter, a merchant without the right.
    static let weChatPayConfigurationCodes: Set<String> = [
        "SIGN_ERROR", "INVALID_REQUEST", "PARAM_ERROR", "NO_AUTH", "MCH_NOT_EXISTS", "APPID_MCHID_NOT_MATCH",
    ]

    /// Apple, by the order's transaction id (Get Transaction Info; Production, then Sandbox).
    func askAppStore(about order: Order, now: Date) async -> ProviderAnswer {
        guard let api = clients.appStore, let verifier = verifiers.appStore else {
            return .configuration("the App Store is not configured for asking: --providers-config needs appStore.trustedRoots and appStore.serverAPI")
        }
        guard let transactionId = order.transactionId else {
            return .notAskable("order \(order.orderId) has no transaction id yet; Apple is asked by transaction id (an order known only by its appAccountToken is found by the sweep of Apple's notification history)")
        }
        let signed: String, environment: AppStoreServerEnvironment
        do throws(AppStoreServerAPIError) {
            (signed, environment) = try await api.transactionInfo(transactionId)
        } catch {
            switch error {
            case .configuration: return .configuration(error.description)
            case .rateLimited(let until): return .nothing(.unreachable, said: error.description, notBefore: until)
            case .unavailable, .unexpected, .malformedAnswer: return .unreachable(error.description)
            case .transactionNotFound: return .notYet(error.description)
            case .invalidTransactionId, .invalidOrderId: return .notAskable(error.description)
            case .refused: return .refused(error.description)
            }
        }
        let transaction: AppStoreTransaction
        do {
            transaction = try await verifier.verifyTransaction(signed, now: now)
        } catch {
            logger.warning("security: the App Store's answer did not verify; nothing recorded", metadata: [
                "order": "\(order.orderId)", "transaction": "\(transactionId)", "reason": "\(error)",
            ])
            return .unverified("Apple's answer (\(environment.rawValue)) did not verify: \(error); nothing recorded",
                               answer: KeptAnswer.appStore(signedTransactionInfo: signed, environment: environment))
        }
        let message = transaction.queriedMessage
        let said = "\(environment.rawValue) answered: \(message.fact.effect.rawValue), product \(transaction.productId)"
            + (message.fact.amount.map { ", \($0.formatted)" } ?? message.fact.unconvertedPrice.map { ", \($0)" } ?? "") + ", signed \(RFC3339.format(transaction.signedDate))"
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
            case .unavailable, .unexpected: return .unreachable("Alipay " + error.description)
            }
        }
        let answer: AlipayTradeQueryAnswer
        do throws(AlipayVerificationError) {
            answer = try verifier.verifyQueryAnswer(body, orderId: order.orderId)
        } catch {
            switch error {
            case .queryFailed(_, let subCode, _), .unsignedRefusal(_, let subCode, _):
                // Alipay could not check our signature or does not know the app: fix the configuration. Any other
                // refusal, signed or not, is Alipay's to lift: asked again later. Neither is a forgery.
                let kept = KeptAnswer.alipay(body, verified: { if case .queryFailed = error { true } else { false } }())
                if Self.alipayConfigurationCodes.contains(where: subCode.contains) {
                    return .configuration("Alipay refused the query: \(error)", answer: kept)
                }
                return .notYet("Alipay refused the query: \(error)", answer: kept)
            default:
                break
            }
            logger.warning("security: Alipay's answer did not verify; nothing recorded", metadata: [
                "order": "\(order.orderId)", "reason": "\(error)",
            ])
            return .unverified("Alipay's answer did not verify: \(error); nothing recorded", answer: KeptAnswer.alipay(body, verified: false))
        }
        guard case .trade(let trade) = answer else {
            return .notYet("Alipay has no trade for order \(order.orderId) yet (ACQ.TRADE_NOT_EXIST): not paid, or not yet; ask again later",
                           answer: KeptAnswer.alipay(body, verified: true))
        }
        let message = trade.message(receivedAt: now)
        return .answered(message, said: "Alipay answered: \(trade.tradeStatus.rawValue), trade \(trade.tradeNo), \(trade.totalAmount.formatted)")
    }

    /// WeChat Pay, by our order id (the order query by `out_trade_no`).
    func askWeChatPay(about order: Order, now: Date) async -> ProviderAnswer {
        guard let api = clients.wechatPay, let verifier = verifiers.wechatPay else {
            return .configuration("WeChat Pay is not configured for asking: --providers-config needs wechatPay (platform keys) and wechatPay.query")
        }
        // A ledger id may hold `.` and `:`, which WeChat Pay's `out_trade_no` may not: no such order was ever placed
        // with it under this id, so there is nothing to ask — not a configuration to fix.
        guard WeChatPayAPI.pathComponent(order.orderId) != nil else {
            return .notAskable("order id \(order.orderId) cannot be a WeChat Pay out_trade_no (letters, digits, _ - | * only, at most 64): WeChat Pay cannot be asked about it")
        }
        let answer: (status: Int, headers: WeChatPayHeaders?, body: [UInt8])
        do throws(ProviderClientError) {
            answer = try await api.queryOrder(order.orderId)
        } catch {
            switch error {
            case .configuration: return .configuration(error.description)
            case .unavailable, .unexpected: return .unreachable("WeChat Pay " + error.description)
            }
        }
        let verified: WeChatPayQueryAnswer
        do throws(WeChatPayVerificationError) {
            verified = try verifier.verifyQueryAnswer(
                status: answer.status, headers: answer.headers, body: answer.body, orderId: order.orderId, now: now)
        } catch {
            switch error {
            case .queryFailed(let status, let code, _), .unsignedRefusal(let status, let code, _):
                // Our request is wrong (its signature, a required header, the merchant's rights): fix the
                // configuration. Too many questions: asked again later. Neither is a forgery.
                let kept = KeptAnswer.wechatPay(answer, verified: { if case .queryFailed = error { true } else { false } }())
                if status == 401 || Self.weChatPayConfigurationCodes.contains(code) {
                    return .configuration("WeChat Pay refused the request: \(error)", answer: kept)
                }
                if status == 429 { return .unreachable("WeChat Pay refused the request: \(error)", answer: kept) }
                return .notYet("WeChat Pay refused the query: \(error)", answer: kept)
            default:
                break
            }
            logger.warning("security: WeChat Pay's answer did not verify; nothing recorded", metadata: [
                "order": "\(order.orderId)", "reason": "\(error)",
            ])
            return .unverified("WeChat Pay's answer did not verify: \(error); nothing recorded",
                               answer: KeptAnswer.wechatPay(answer, verified: false))
        }
        guard case .trade(let trade) = verified else {
            return .notYet("WeChat Pay has no order \(order.orderId) (ORDER_NOT_EXIST): never placed, or not yet; ask again later",
                           answer: KeptAnswer.wechatPay(answer, verified: true))
        }
        guard let message = trade.message(receivedAt: now) else {
            return .notYet("WeChat Pay answered \(trade.tradeState.rawValue): not paid yet, nothing to record; ask again later",
                           answer: KeptAnswer.wechatPay(answer, verified: true))
        }
        return .answered(message, said: "WeChat Pay answered: \(trade.tradeState.rawValue), transaction \(trade.transactionId ?? "-"), \(trade.amount.formatted)")
    }
}
