import Foundation
import LedgerCore
@testable import LedgerPostgres

/// The events of one order's happy path (created → queued → receipt → verified → granted → finished), for tests
/// at every layer. Every access makes a new event id: to post the same event twice, keep the submission.
public struct Lifecycle: Sendable {
    public var accountId = "acct-1"
    public var productId = "gems.100"
    public var transactionId = "2000000" + String(Int.random(in: 100_000...999_999))
    public var amount = Money(value: 499, currency: "USD")
    public var environment = "production"

    public init() {}

    public var created: Submission {
        submission("order.created", [
            "accountId": .string(accountId), "productId": .string(productId),
            "amount": ["value": .int(amount.value), "currency": .string(amount.currency)],
            "provider": "app_store", "environment": .string(environment),
        ])
    }
    public var queued: Submission { submission("payment.queued", ["applicationUsername": .string(accountId)]) }
    public var receipt: Submission {
        submission("receipt.received", ["transactionId": .string(transactionId), "receipt": "MIIT-opaque-receipt-bytes"])
    }
    public var verified: Submission {
        submission("receipt.verified", [
            "transactionId": .string(transactionId), "productId": .string(productId), "environment": .string(environment),
            "purchasedAt": "2026-11-22T10:00:00Z",
        ])
    }
    public func granted(to account: String? = nil) -> Submission {
        submission("order.granted", ["transactionId": .string(transactionId), "accountId": .string(account ?? accountId)])
    }
    public var finished: Submission { submission("order.finished", [:]) }
    public var refunded: Submission { submission("order.refunded", ["transactionId": .string(transactionId)]) }
    public var cancelled: Submission { submission("order.cancelled", ["reason": "user_cancelled"]) }
    public func verificationFailed(retryable: Bool) -> Submission {
        submission("verification.failed", ["code": "21005", "retryable": .bool(retryable)])
    }

    /// All six steps, in order.
    public var happyPath: [Submission] { [created, queued, receipt, verified, granted(), finished] }

    public func submission(_ type: String, _ data: [String: JSONValue]) -> Submission {
        Submission(eventId: UUID(), type: type, data: .object(data))
    }
}

extension Submission {
    /// The event as the HTTP API takes it.
    public var json: JSONValue {
        var members: [String: JSONValue] = [
            "eventId": .string(eventId.uuidString.lowercased()), "type": .string(type), "data": data,
        ]
        if let occurredAt { members["occurredAt"] = .string(RFC3339.format(occurredAt)) }
        return .object(members)
    }
}
