import Foundation
import Hummingbird
import LedgerCore
import LedgerPostgres

/// A subscription and an account's entitlements (scope `events:read`). Both are derived on every request from the
/// subscription's signed facts as the ledger holds them now — no cache that a write or the passing of time leaves
/// stale — at the moment asked (`asOf`, now by default).
struct SubscriptionRoutes {
    typealias Context = LedgerRequestContext
    let ledger: Ledger

    func register(readers: RouterGroup<Context>) {
        readers.get("subscriptions/{subscriptionId}", use: subscription)
        readers.get("accounts/{accountId}/entitlements", use: entitlements)
    }

    /// The subscription: its owner, its entitlement at `asOf` (now by default), its renewal info then, and every
    /// transaction (the first purchase and each renewal) as last signed, the earliest first.
    @Sendable func subscription(_ request: Request, context: Context) async throws -> Response {
        let subscriptionId = try context.pathId("subscriptionId")
        let query = QueryParameters(request)
        try query.onlyAllowing(["asOf"])
        let moment = try query.time("asOf") ?? Date()
        guard let subscription = try await ledger.subscription(subscriptionId) else {
            throw APIError.notFound("subscription \(subscriptionId) has never been seen by the ledger")
        }
        return JSONResponse.make(status: .ok, body: subscription.json(at: moment))
    }

    /// Each product the account is entitled to at `asOf` (now by default), until when, and the signed transaction
    /// that proves it; and every subscription it owns, entitled or not, with its state then.
    @Sendable func entitlements(_ request: Request, context: Context) async throws -> Response {
        let accountId = try context.pathId("accountId")
        let query = QueryParameters(request)
        try query.onlyAllowing(["asOf"])
        let moment = try query.time("asOf") ?? Date()
        let owned = try await ledger.subscriptions(ofAccount: accountId)
        let entitled = owned.compactMap { subscription -> JSONValue? in
            let entitlement = subscription.entitlement(at: moment)
            guard entitlement.isEntitled, let proof = entitlement.proof else { return nil }
            return [
                "productId": .string(proof.productId), "subscriptionId": .string(subscription.subscriptionId),
                "state": .string(entitlement.state.rawValue), "until": .time(entitlement.until),
                "transaction": proof.json,
            ]
        }
        return JSONResponse.make(status: .ok, body: [
            "accountId": .string(accountId), "asOf": .time(moment), "entitlements": .array(entitled),
            "subscriptions": .array(owned.map { subscription -> JSONValue in
                ["subscriptionId": .string(subscription.subscriptionId),
                 "state": .string(subscription.entitlement(at: moment).state.rawValue)]
            }),
        ])
    }
}

extension Subscription {
    /// The subscription as `GET /v1/subscriptions/{id}` answers it, at `moment`.
    func json(at moment: Date) -> JSONValue {
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
                transactions.values.sorted { ($0.purchasedAt, $0.transactionId) < ($1.purchasedAt, $1.transactionId) }.map(\.json)),
        ]
    }
}

extension SubscriptionTransaction {
    /// A transaction as the API shows it: its signed dates, and its price as minor units and as money ("4.99 USD").
    var json: JSONValue {
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
