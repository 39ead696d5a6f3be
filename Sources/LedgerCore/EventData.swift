import Foundation

extension OrderEvent {
    /// The event as the fold will read it back: its stored data, parsed by the same rules as a client's event.
    /// Every event passes this before it is written, whoever brings it (a client, a provider's message, a follow-up
    /// the ledger derives): a value the rules refuse must never reach the log, where no one could read it back.
    public func validatedForStorage() throws(EventValidationError) {
        _ = try OrderEvent(type: type.rawValue, data: data)
    }

    /// The event's data as stored: defaults filled in, absent optionals left out, the receipt replaced by its
    /// SHA-256, UUIDs lower-case, times in UTC. `OrderEvent(type: type.rawValue, data: data)` gives this event back.
    public var data: JSONValue {
        var members: [String: JSONValue]
        switch self {
        case .created(let created):
            members = [
                "accountId": .string(created.accountId),
                "productId": .string(created.productId),
                "quantity": .int(Int64(created.quantity)),
                "amount": .money(created.amount),
                "provider": .string(created.provider.rawValue),
                "environment": .string(created.environment.rawValue),
            ]
            members["appAccountToken"] = created.appAccountToken.map(JSONValue.uuid)
        case .paymentQueued(let queued):
            members = [:]
            members["appAccountToken"] = queued.appAccountToken.map(JSONValue.uuid)
            members["applicationUsername"] = queued.applicationUsername.map(JSONValue.string)
        case .receiptReceived(let receipt):
            members = ["transactionId": .string(receipt.transactionId), "source": .string(receipt.source.rawValue)]
            members["originalTransactionId"] = receipt.originalTransactionId.map(JSONValue.string)
            members["submittedBy"] = receipt.submittedBy.map(JSONValue.string)
            members["receiptSha256"] = receipt.receiptSha256.map(JSONValue.string)
            members["signedTransaction"] = receipt.signedTransaction.map(JSONValue.string)
            if !receipt.otherPurchases.isEmpty { members["otherPurchases"] = .array(receipt.otherPurchases.map(\.json)) }
        case .receiptVerified(let verified):
            members = [
                "transactionId": .string(verified.transactionId),
                "productId": .string(verified.productId),
                "quantity": .int(Int64(verified.quantity)),
                "environment": .string(verified.environment.rawValue),
                "purchasedAt": .eventTime(verified.purchasedAt),
            ]
            members["price"] = verified.price.map(JSONValue.money)
            members["unconvertedPrice"] = verified.unconvertedPrice.map(JSONValue.unconvertedPrice)
            members["appAccountToken"] = verified.appAccountToken.map(JSONValue.uuid)
        case .verificationFailed(let failure):
            members = ["code": .string(failure.code), "retryable": .bool(failure.retryable)]
            members["message"] = failure.message.map(JSONValue.string)
        case .granted(let grant):
            members = ["transactionId": .string(grant.transactionId), "accountId": .string(grant.accountId)]
            members["items"] = grant.items
        case .finished(let finish):
            members = ["by": .string(finish.by.rawValue)]
        case .cancelled(let cancel):
            members = ["reason": .string(cancel.reason.rawValue)]
        case .refunded(let refund):
            members = ["transactionId": .string(refund.transactionId)]
            members["amount"] = refund.amount.map(JSONValue.money)
            members["reason"] = refund.reason.map(JSONValue.string)
            members["refundedAt"] = refund.refundedAt.map(JSONValue.eventTime)
        case .refundReversed(let reversal):
            members = ["transactionId": .string(reversal.transactionId)]
        case .providerNotified(let notice):
            members = [
                "provider": .string(notice.provider.rawValue),
                "notificationId": .string(notice.notificationId),
                "notificationType": .string(notice.notificationType),
                "effect": .string(notice.effect.rawValue),
                "signedAt": .eventTime(notice.signedAt),
                "evidence": notice.evidence,
            ]
            members["subtype"] = notice.subtype.map(JSONValue.string)
            members["transactionId"] = notice.transactionId.map(JSONValue.string)
            members["originalTransactionId"] = notice.originalTransactionId.map(JSONValue.string)
            members["productId"] = notice.productId.map(JSONValue.string)
            members["amount"] = notice.amount.map(JSONValue.money)
            members["unconvertedPrice"] = notice.unconvertedPrice.map(JSONValue.unconvertedPrice)
            members["environment"] = notice.environment.map { .string($0.rawValue) }
            members["appAccountToken"] = notice.appAccountToken.map(JSONValue.uuid)
            members["purchasedAt"] = notice.purchasedAt.map(JSONValue.eventTime)
            members["revocationReason"] = notice.revocationReason.map(JSONValue.string)
        }
        return .object(members)
    }
}

extension JSONValue {
    static func unconvertedPrice(_ price: UnconvertedPrice) -> JSONValue {
        .object(["milliunits": .int(price.milliunits), "quantity": .int(price.quantity), "currency": .string(price.currency)])
    }

    static func uuid(_ uuid: UUID) -> JSONValue {
        .string(uuid.lowercasedText)
    }

    /// A time as event data keeps it (`EventTime`): not the API's `time`.
    static func eventTime(_ date: Date) -> JSONValue {
        .string(EventTime.format(date))
    }
}
