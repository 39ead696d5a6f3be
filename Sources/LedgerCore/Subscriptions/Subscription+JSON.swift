import Foundation

extension Subscription {
    /// The subscription as `GET /v1/subscriptions/{id}` answers it, at `moment`.
    public func json(at moment: Date) -> JSONValue {
        let entitlement = self.entitlement(at: moment)
        let renewal = renewalInfo(at: moment)
        return [
            "subscriptionId": .string(subscriptionId), "accountId": .text(accountId),
            "orderId": .text(orderId), "version": .int(Int64(version)),
            "updatedAt": .time(updatedAt), "asOf": .time(moment),
            "entitlement": [
                "state": .string(entitlement.state.rawValue), "entitled": .bool(entitlement.isEntitled),
                "until": .time(entitlement.until),
                "transactionId": entitlement.proof.map { .string($0.transactionId) } ?? .null,
            ],
            "renewal": renewal.map { info -> JSONValue in
                [
                    "autoRenew": .bool(info.autoRenew), "renewsTo": .text(info.renewsTo),
                    "inBillingRetry": .bool(info.inBillingRetry),
                    "gracePeriodExpiresAt": .time(info.gracePeriodExpiresAt),
                    "signedAt": .time(info.signedAt),
                ]
            } ?? .null,
            "transactions": .array(
                transactions.values.sorted { ($0.purchasedAt, $0.transactionId) < ($1.purchasedAt, $1.transactionId) }
                    .map { transaction -> JSONValue in
                        guard case .object(var members) = transaction.apiJSON else { return transaction.apiJSON }
                        members["grantedAt"] = .time(grants[transaction.transactionId])
                        return .object(members)
                    }),
        ]
    }
}

extension SubscriptionTransaction {
    /// A transaction as the API shows it: its signed dates, and its price as minor units and as money ("4.99 USD").
    /// (`json` is its form in an event's data.)
    public var apiJSON: JSONValue {
        [
            "transactionId": .string(transactionId), "webOrderLineItemId": .text(webOrderLineItemId),
            "productId": .string(productId), "environment": .string(environment.rawValue),
            "purchasedAt": .time(purchasedAt), "expiresAt": .time(expiresAt),
            "price": price.map { price -> JSONValue in
                ["value": .int(price.value), "currency": .string(price.currency), "text": .string(price.formatted)]
            } ?? .null,
            "familyShared": .bool(familyShared),
            "revocation": revocation.map { revocation -> JSONValue in
                [
                    "at": .time(revocation.at), "kind": .string(revocation.kind.rawValue),
                    "percentage": revocation.percentage.map(JSONValue.int) ?? .null,
                ]
            } ?? .null,
            "signedAt": .time(signedAt),
        ]
    }
}
