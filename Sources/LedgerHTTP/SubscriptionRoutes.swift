import Foundation
import Hummingbird
import LedgerCore
import LedgerPostgres
import LedgerProviders

/// A subscription and an account's entitlements (scope `events:read`). Both are derived on every request from the
/// subscription's signed facts as the ledger holds them now — no cache that a write or the passing of time leaves
/// stale — at the moment asked (`asOf`, now by default). An account's claim of a subscription (scope `events:write`).
struct SubscriptionRoutes {
    typealias Context = LedgerRequestContext
    let ledger: Ledger
    /// Where the recovery schedule's question about a subscription stands (`recovery` in its answer).
    let recovery: RecoverySchedule
    /// Verifies the signed transaction a claim shows; nil when the App Store is not configured (a claim is a 501).
    let appStore: AppStoreJWSVerifier?
    /// What a claim by another account than the owner does (`serve --subscription-transfer`).
    let transfers: SubscriptionTransferPolicy

    func register(writers: RouterGroup<Context>, readers: RouterGroup<Context>) {
        writers.post("subscriptions/{subscriptionId}/claims", use: claim)
        writers.post("subscriptions/{subscriptionId}/grants", use: grant)
        readers.get("subscriptions/{subscriptionId}", use: subscription)
        readers.get("accounts/{accountId}/entitlements", use: entitlements)
    }

    /// An account claims the subscription with one of its signed transactions (StoreKit 2's `jwsRepresentation`, as
    /// a restore or `Transaction.currentEntitlements` gives it): `{"accountId", "signedTransaction"}`. 201 when the
    /// claim moved the subscription (claimed while nobody owned it, or transferred under the `transfer` policy), 200
    /// when the account owns it already or the same claim is sent again; 409 `account_mismatch` when another account
    /// owns it under `keep` (the refusal is listed for finance). The answer is the subscription as after the claim.
    @Sendable func claim(_ request: Request, context: Context) async throws -> Response {
        let subscriptionId = try context.pathId("subscriptionId")
        let (accountId, transaction) = try await accountAndSignedTransaction(request)
        let metadata = EventMetadata(actor: context.actor, requestId: context.requestId)
        let outcome = try await ledger.claimSubscription(
            subscriptionId, accountId: accountId, transaction: transaction, policy: transfers, metadata: metadata)
        let (status, name, subscription, replay): (HTTPResponse.Status, String, Subscription, Bool) = switch outcome {
        case .claimed(let recorded): (.created, "claimed", recorded.subscription, recorded.append.isReplay)
        case .transferred(_, let recorded): (.created, "transferred", recorded.subscription, recorded.append.isReplay)
        case .alreadyOwned(let subscription): (.ok, "already_owned", subscription, false)
        }
        var answer: [String: JSONValue] = ["outcome": .string(name), "subscription": subscription.json(at: Date())]
        if case .transferred(let from, _) = outcome { answer["from"] = .string(from) }
        if replay { return JSONResponse.make(status: .ok, body: .object(answer), headers: [.idempotentReplay: "true"]) }
        return JSONResponse.make(status: status, body: .object(answer))
    }

    /// The backend credited one period to the account that owns the subscription: `{"accountId",
    /// "signedTransaction"}` (the period's signed transaction, as the app's `Transaction.updates` gives it). 201 with
    /// the subscription; the same grant again 200 (`Idempotent-Replay`); 409 `already_granted` for a period credited
    /// before, `account_mismatch` for another account than the owner, `invalid_transition` while nobody owns it.
    @Sendable func grant(_ request: Request, context: Context) async throws -> Response {
        let subscriptionId = try context.pathId("subscriptionId")
        let (accountId, transaction) = try await accountAndSignedTransaction(request)
        let recorded = try await ledger.grantSubscriptionPeriod(
            subscriptionId, accountId: accountId, transaction: transaction,
            metadata: EventMetadata(actor: context.actor, requestId: context.requestId))
        let body = recorded.subscription.json(at: Date())
        if recorded.append.isReplay { return JSONResponse.make(status: .ok, body: body, headers: [.idempotentReplay: "true"]) }
        return JSONResponse.make(status: .created, body: body)
    }

    /// A claim's or a grant's body: the account, and the signed transaction, verified against the App Store's chain.
    private func accountAndSignedTransaction(_ request: Request) async throws -> (String, SubscriptionTransaction) {
        let body = try JSONFields(try await JSONResponse.readBody(request), path: "")
        try body.onlyAllowing(["accountId", "signedTransaction"])
        let accountId = try body.required("accountId", body.string)
        let jws = try body.required("signedTransaction", body.string)
        guard let appStore else { throw ProviderRoutes.notConfigured(.appStore) }
        let signed: AppStoreTransaction
        do {
            signed = try await appStore.verifyTransaction(jws, now: Date())
        } catch {
            throw APIError.invalidRequest(field: "signedTransaction", "signedTransaction does not verify: \(error)")
        }
        guard let transaction = signed.subscriptionTransaction else {
            throw APIError.invalidRequest(
                field: "signedTransaction", "signedTransaction is not an auto-renewable subscription's transaction")
        }
        return (accountId, transaction)
    }

    /// The subscription: its owner, its entitlement at `asOf` (now by default), its renewal info then, every
    /// transaction (the first purchase and each renewal) as last signed, the earliest first; and, once the ledger has
    /// asked Apple about it, where that question stands now (`recovery`).
    @Sendable func subscription(_ request: Request, context: Context) async throws -> Response {
        let subscriptionId = try context.pathId("subscriptionId")
        let query = QueryParameters(request)
        try query.onlyAllowing(["asOf"])
        let moment = try query.time("asOf") ?? Date()
        guard let subscription = try await ledger.subscription(subscriptionId) else {
            throw APIError.notFound("subscription \(subscriptionId) has never been seen by the ledger")
        }
        guard let question = try await recovery.subscriptionQuestion(subscriptionId),
              case .object(var members) = subscription.json(at: moment)
        else { return JSONResponse.make(status: .ok, body: subscription.json(at: moment)) }
        members["recovery"] = [
            "periodEndsAt": .time(question.periodEndsAt), "attempts": .int(Int64(question.attempts)),
            "lastAskedAt": .time(question.lastAskedAt), "lastOutcome": .text(question.lastOutcome?.rawValue),
            "said": .text(question.lastSaid), "nextAskAt": .time(question.nextAskAt),
        ]
        return JSONResponse.make(status: .ok, body: .object(members))
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
                "transaction": proof.apiJSON,
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
