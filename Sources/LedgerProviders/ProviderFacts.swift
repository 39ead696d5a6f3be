import Foundation
import LedgerCore

extension AppStoreNotification {
    /// The fact this notification records. `TEST` records nothing (nil): it only checks the endpoint.
    /// `ONE_TIME_CHARGE` and `SUBSCRIBED` are payments; `REFUND` a refund of the whole order; `REFUND_REVERSED`
    /// its reversal; `CONSUMPTION_REQUEST` is listed for finance; every other type is kept as evidence only (a
    /// renewal, `DID_RENEW`, is a new transaction of the subscription, not of the order that started it).
    public var message: ProviderMessage? {
        let effect: ProviderEffect
        switch notificationType {
        case .test: return nil
        case .oneTimeCharge, .subscribed: effect = .payment
        case .refund: effect = .refund
        case .refundReversed: effect = .refundReversed
        case .consumptionRequest: effect = .consumptionRequest
        default: effect = .none
        }
        let fact = ProviderNotified(
            provider: .appStore, notificationId: notificationUUID, notificationType: notificationType.rawValue,
            subtype: subtype, effect: effect, signedAt: signedDate, transactionId: transaction?.transactionId,
            originalTransactionId: transaction?.originalTransactionId, productId: transaction?.productId,
            amount: effect == .payment ? transaction?.paidPrice.amount : nil,
            unconvertedPrice: effect == .payment ? transaction?.paidPrice.unconverted : nil, environment: environment.purchaseEnvironment,
            appAccountToken: transaction?.appAccountToken, purchasedAt: transaction?.purchaseDate,
            revocationReason: transaction?.revocationReason.map(String.init),
            evidence: ["signedPayload": .string(rawJWS)])
        let transactions = [transaction?.transactionId, transaction?.originalTransactionId].compactMap { $0 }
        return ProviderMessage(
            fact: fact,
            match: ProviderMatch(orderId: nil, transactionIds: transactions, appAccountToken: transaction?.appAccountToken))
    }
}

extension AppStoreTransaction {
    /// The fact Apple's answer about this transaction records, when the ledger asked (App Store Server API, Get
    /// Transaction Info): a payment, or a refund once Apple has revoked it. Its id names the transaction and what
    /// Apple said, so asking again records nothing new until the answer changes.
    public var queriedMessage: ProviderMessage {
        let effect: ProviderEffect = revocationDate == nil ? .payment : .refund
        let fact = ProviderNotified(
            provider: .appStore, notificationId: "query:\(transactionId):\(effect.rawValue)", notificationType: "TRANSACTION_INFO",
            effect: effect, signedAt: signedDate, transactionId: transactionId, originalTransactionId: originalTransactionId,
            productId: productId, amount: effect == .payment ? paidPrice.amount : nil,
            unconvertedPrice: effect == .payment ? paidPrice.unconverted : nil, environment: environment.purchaseEnvironment,
            appAccountToken: appAccountToken, purchasedAt: purchaseDate, revocationReason: revocationReason.map(String.init),
            evidence: ["signedTransactionInfo": .string(rawJWS), "source": "query"])
        return ProviderMessage(
            fact: fact,
            match: ProviderMatch(orderId: nil, transactionIds: [transactionId, originalTransactionId], appAccountToken: appAccountToken))
    }

    /// What the customer paid: `price` (milliunits, per item) × `quantity`, in minor units of `currency` when that is
    /// exact; as Apple stated it when it is not (4991 USD milliunits, a negative price), so that it is compared with
    /// the order's amount and refused, never taken for a transaction without a price.
    public var paidPrice: ApplePaidPrice {
        guard let price, let currency else { return .notStated }
        let quantity = Int64(quantity ?? 1)
        let (total, overflow) = price.multipliedReportingOverflow(by: quantity)
        guard !overflow, let minorUnits = Milliunits.minorUnits(milliunits: total, currency: currency) else {
            return .unconverted(UnconvertedPrice(milliunits: price, quantity: quantity, currency: currency))
        }
        return .amount(Money(value: minorUnits, currency: currency))
    }

    /// The verification a StoreKit 2 signed transaction posted with `receipt.received` amounts to.
    public var verification: ReceiptVerified {
        ReceiptVerified(
            transactionId: transactionId, productId: productId, quantity: quantity ?? 1,
            environment: environment.purchaseEnvironment, purchasedAt: purchaseDate, price: paidPrice.amount,
            unconvertedPrice: paidPrice.unconverted, appAccountToken: appAccountToken)
    }
}

extension AppStoreEnvironment {
    /// Production is production; Sandbox, Xcode and LocalTesting are test purchases.
    public var purchaseEnvironment: PurchaseEnvironment { self == .production ? .production : .sandbox }
}

extension AlipayNotification {
    /// `TRADE_SUCCESS` / `TRADE_FINISHED` are payments, unless `refund_fee` is present: then a refund (partial
    /// refunds come as `TRADE_SUCCESS`, full ones as `TRADE_CLOSED`); `TRADE_CLOSED` without a refund closes an
    /// unpaid trade; `WAIT_BUYER_PAY` is evidence only. `receivedAt` stands in for a time Alipay did not send.
    public func message(receivedAt: Date) -> ProviderMessage {
        let effect: ProviderEffect
        if refundFee != nil {
            effect = .refund
        } else {
            switch tradeStatus {
            case .tradeSuccess, .tradeFinished: effect = .payment
            case .tradeClosed: effect = .closed
            case .waitBuyerPay: effect = .none
            }
        }
        let fact = ProviderNotified(
            provider: .alipay, notificationId: notifyId, notificationType: tradeStatus.rawValue, effect: effect,
            signedAt: (effect == .refund ? refundTime : paymentTime) ?? receivedAt,
            transactionId: tradeNo, amount: effect == .refund ? refundFee : totalAmount, purchasedAt: paymentTime,
            evidence: ["body": .string(String(decoding: rawBody, as: UTF8.self))])
        return ProviderMessage(fact: fact, match: ProviderMatch(orderId: orderId, transactionIds: [tradeNo]))
    }
}

extension WeChatPayNotification {
    /// A payment resource in `SUCCESS` is a payment, `CLOSED` closes the trade; a refund resource in `SUCCESS` is a
    /// refund of `amount.refund`; anything else is evidence only. `headers` are kept with the body, so the
    /// signature can be checked again. `receivedAt` stands in for a time WeChat Pay did not send.
    public func message(headers: WeChatPayHeaders, receivedAt: Date) -> ProviderMessage {
        let evidence: JSONValue = [
            "body": .string(String(decoding: rawBody, as: UTF8.self)),
            "timestamp": .string(headers.timestamp), "nonce": .string(headers.nonce),
            "serial": .string(headers.serial), "signature": .string(headers.signature),
        ]
        let effect: ProviderEffect, orderId: String, transactionId: String, amount: Money, at: Date?
        switch resource {
        case .payment(let payment):
            effect = switch payment.tradeState {
            case .success: .payment
            case .closed: .closed
            default: .none
            }
            (orderId, transactionId, amount, at) = (payment.orderId, payment.transactionId, payment.amount, payment.successTime)
        case .refund(let refund):
            effect = refund.refundStatus == .success ? .refund : .none
            (orderId, transactionId, amount, at) = (refund.orderId, refund.transactionId, refund.refund, refund.successTime)
        }
        let fact = ProviderNotified(
            provider: .wechatPay, notificationId: id, notificationType: eventType, effect: effect,
            signedAt: at ?? createTime ?? receivedAt, transactionId: transactionId, amount: amount,
            purchasedAt: effect == .payment ? at : nil, evidence: evidence)
        return ProviderMessage(fact: fact, match: ProviderMatch(orderId: orderId, transactionIds: [transactionId]))
    }
}

/// Apple's price as the ledger compares it with an order's amount.
public enum ApplePaidPrice: Sendable, Hashable {
    /// The transaction carries no price (`price` or `currency` absent): the one case where there is nothing to compare.
    case notStated
    /// `price` × `quantity`, exactly, in minor units.
    case amount(Money)
    /// A price that is not a whole, non-negative number of minor units: compared, and no order's amount.
    case unconverted(UnconvertedPrice)

    /// The amount in minor units, when the price converts exactly.
    public var amount: Money? { if case .amount(let money) = self { money } else { nil } }
    /// The price as stated, when it does not convert exactly.
    public var unconverted: UnconvertedPrice? { if case .unconverted(let price) = self { price } else { nil } }
}

/// Apple's milliunit prices (1/1000 of the major unit) in minor units, by the ISO 4217 exponents (`CurrencyExponent`).
enum Milliunits {
    /// Minor units of `currency`; nil when there is no exact, non-negative number of them: a negative price, or
    /// milliunits that do not divide evenly (4991 USD milliunits is 499.1 cents). A currency with more than three
    /// decimals has minor units finer than a milliunit: 4990 CLF milliunits are 49900 of them.
    static func minorUnits(milliunits: Int64, currency: String) -> Int64? {
        guard milliunits >= 0 else { return nil }
        let exponent = CurrencyExponent.of(currency)
        var scale: Int64 = 1
        for _ in 0..<abs(exponent - 3) { scale *= 10 }
        if exponent > 3 {
            let (minorUnits, overflow) = milliunits.multipliedReportingOverflow(by: scale)
            return overflow ? nil : minorUnits
        }
        guard milliunits % scale == 0 else { return nil }
        return milliunits / scale
    }
}
