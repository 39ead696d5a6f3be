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
            amount: effect == .payment ? transaction?.paidAmount : nil, environment: environment.purchaseEnvironment,
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
            productId: productId, amount: effect == .payment ? paidAmount : nil, environment: environment.purchaseEnvironment,
            appAccountToken: appAccountToken, purchasedAt: purchaseDate, revocationReason: revocationReason.map(String.init),
            evidence: ["signedTransactionInfo": .string(rawJWS), "source": "query"])
        return ProviderMessage(
            fact: fact,
            match: ProviderMatch(orderId: nil, transactionIds: [transactionId, originalTransactionId], appAccountToken: appAccountToken))
    }

    /// What the customer paid, in minor units of `currency`: `price` (milliunits, per item) × `quantity`. Nil when
    /// Apple sent no price, or when the milliunits are not a whole number of the currency's minor units.
    public var paidAmount: Money? {
        guard let price, let currency else { return nil }
        let (total, overflow) = price.multipliedReportingOverflow(by: Int64(quantity ?? 1))
        guard !overflow, let minorUnits = Milliunits.minorUnits(milliunits: total, currency: currency) else { return nil }
        return Money(value: minorUnits, currency: currency)
    }

    /// The verification a StoreKit 2 signed transaction posted with `receipt.received` amounts to.
    public var verification: ReceiptVerified {
        ReceiptVerified(
            transactionId: transactionId, productId: productId, quantity: quantity ?? 1,
            environment: environment.purchaseEnvironment, purchasedAt: purchaseDate, price: paidAmount,
            appAccountToken: appAccountToken)
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

/// Apple's milliunit prices (1/1000 of the major unit) in minor units, by the ISO 4217 exponents (`CurrencyExponent`).
enum Milliunits {
    /// Minor units of `currency`; nil when the milliunits do not divide evenly (or the currency has more than three
    /// decimals, finer than a milliunit).
    static func minorUnits(milliunits: Int64, currency: String) -> Int64? {
        let exponent = CurrencyExponent.of(currency)
        guard exponent <= 3 else { return nil }
        var divisor: Int64 = 1
        for _ in exponent..<3 { divisor *= 10 }
        guard milliunits >= 0, milliunits % divisor == 0 else { return nil }
        return milliunits / divisor
    }
}
