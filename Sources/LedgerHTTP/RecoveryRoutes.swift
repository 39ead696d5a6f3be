import Foundation
import Hummingbird
import LedgerCore
import LedgerPostgres
import LedgerRecovery

/// `POST /v1/orders/{orderId}/recover` (scope `orders:recover`): support asks the order's provider now (补单), as
/// `ledger recover --order` does. The answer says what was asked, what the provider answered and what was recorded,
/// and where the order stands on the recovery schedule; the attempt is recorded under the token's name.
/// 501 when no provider can be asked (no `--providers-config` with a query section), 409 `recovery_in_progress`
/// while another node is asking about the order, 429 `too_soon` (with `Retry-After`) when it was asked less than 10 s
/// ago or this node sent its provider 3 people's questions in the last second, 404 for an order the ledger has never
/// seen. A person's question never uses up the schedule's attempts.
struct RecoveryRoutes {
    typealias Context = LedgerRequestContext
    let recoverer: Recoverer?

    func register(recoverers: RouterGroup<Context>) {
        recoverers.post("orders/{orderId}/recover", use: recover)
        recoverers.post("app-store/order-lookup/{appleOrderId}", use: lookUpAppleOrder)
    }

    /// `POST /v1/app-store/order-lookup/{appleOrderId}`: the order id on the customer's emailed receipt from Apple.
    /// Apple's transactions for it are verified and recorded on the orders they belong to (`AppleOrderLookup`).
    /// 404 when Apple knows no such order, 501 when the App Store cannot be asked, 502 `provider_unavailable` when
    /// Apple did not answer.
    @Sendable func lookUpAppleOrder(_ request: Request, context: Context) async throws -> Response {
        let appleOrderId = try context.pathId("appleOrderId")
        guard let recoverer else { throw Self.notConfigured }
        switch try await recoverer.lookUpAppleOrder(appleOrderId) {
        case .found(let transactions):
            return JSONResponse.make(status: .ok, body: [
                "appleOrderId": .string(appleOrderId),
                "transactions": .array(transactions.map { transaction in
                    .object([
                        "transactionId": .text(transaction.transactionId), "productId": .text(transaction.productId),
                        "orderId": .text(transaction.orderId), "outcome": .string(transaction.outcome.rawValue),
                        "said": .string(transaction.said),
                    ])
                }),
            ])
        case .invalid:
            throw APIError.notFound("Apple knows no order \(appleOrderId) for this app (the id on the customer's receipt, e.g. MK5TTTR3KP)")
        case .notAsked(let reason, configuration: true):
            throw APIError(.notImplemented, "not_configured", reason)
        case .notAsked(let reason, configuration: false):
            throw APIError(.badGateway, "provider_unavailable", reason + "; ask again later")
        case .tooSoon(let wait):
            throw Self.tooSoon("too many questions to Apple from this node", wait: wait)
        }
    }

    /// 429 with `Retry-After` (whole seconds, at least 1): a person's question refused for now (`RecoveryPlan`).
    static func tooSoon(_ reason: String, wait: Duration) -> APIError {
        let seconds = max(1, Int(wait.seconds.rounded(.up)))
        return APIError(.tooManyRequests, "too_soon", "\(reason): ask again in \(seconds) s", headers: [.retryAfter: String(seconds)])
    }

    static let notConfigured = APIError(
        .notImplemented, "not_configured", "no provider can be asked: serve needs --providers-config with a query section (docs/providers.md)")

    @Sendable func recover(_ request: Request, context: Context) async throws -> Response {
        let orderId = try context.pathId("orderId")
        guard let recoverer else { throw Self.notConfigured }
        switch try await recoverer.askNow(orderId: orderId, askedBy: "token:\(context.actor)") {
        case .asked(let attempt, let next):
            return JSONResponse.make(status: .ok, body: attempt.json(next: next))
        case .busy:
            throw APIError(.conflict, "recovery_in_progress", "another node is asking about order \(orderId) now; its answer will be on the order")
        case .cannotAsk(_, let said):
            throw APIError(.notImplemented, "not_configured", said)
        case .tooSoon(_, let wait):
            throw Self.tooSoon("order \(orderId) was asked about moments ago, or its provider was asked too often", wait: wait)
        case .unknownOrder, .settled, .dryRun:
            throw APIError.notFound("order \(orderId) is not in the ledger")
        }
    }
}

extension RecoveryAttempt {
    /// One attempt as the API writes it.
    var json: JSONValue {
        .object([
            "attempt": .int(Int64(attempt)),
            "provider": .string(provider),
            "askedBy": .string(askedBy),
            "askedAt": .time(askedAt),
            "durationMs": .int(Int64(durationMilliseconds)),
            "outcome": .string(outcome.rawValue),
            "said": .string(said),
            "providerWords": .text(providerWords),
            "answer": answer ?? .null,
            "recorded": .array(recorded.map(JSONValue.string)),
        ])
    }

    /// The answer to `POST …/recover`: the attempt, and when the schedule asks next (null once it has ended).
    func json(next: RecoveryEntry.Next) -> JSONValue {
        guard case .object(var fields) = json else { return json }
        fields["orderId"] = .string(orderId)
        fields.merge(next.json) { $1 }
        return .object(fields)
    }
}

extension RecoveryEntry.Next {
    var json: [String: JSONValue] {
        switch self {
        case .due(let date): ["status": .string(RecoveryStatus.pending.rawValue), "nextAttemptAt": .time(date)]
        case .ended(let status): ["status": .string(status.rawValue), "nextAttemptAt": .null]
        }
    }
}

extension RecoveryEntry {
    /// The order's place on the recovery schedule, in `GET /v1/orders/{id}`.
    var json: JSONValue {
        var fields: [String: JSONValue] = [
            "reason": .string(reason.rawValue),
            "enteredAt": .time(enteredAt),
            "attemptCount": .int(Int64(attemptCount)),
            "endedAt": .time(endedAt),
            "attempts": .array(attempts.map(\.json)),
        ]
        fields.merge(next.json) { $1 }
        return .object(fields)
    }
}
