import Foundation

/// How the API (and the CLI's `--json`) writes the ledger's values: camelCase, times RFC 3339 UTC, absent
/// values as explicit nulls.
extension JSONValue {
    public static func time(_ date: Date?) -> JSONValue { date.map { .string(RFC3339.format($0)) } ?? .null }
    public static func text(_ text: String?) -> JSONValue { text.map(JSONValue.string) ?? .null }
    public static func money(_ money: Money) -> JSONValue {
        .object(["value": .int(money.value), "currency": .string(money.currency)])
    }
}

extension Order {
    public var json: JSONValue {
        .object([
            "orderId": .string(orderId),
            "accountId": .string(accountId),
            "productId": .string(productId),
            "quantity": .int(Int64(quantity)),
            "amount": .money(amount),
            "provider": .string(provider.rawValue),
            "environment": .string(environment.rawValue),
            "state": .string(state.rawValue),
            "version": .int(Int64(version)),
            "transactionId": .text(transactionId),
            "flags": .array(flags.map { .string($0.rawValue) }),
            "verificationAttempts": .int(Int64(verificationAttempts)),
            "lastErrorCode": .text(lastErrorCode),
            "refundedAmount": refundedAmount.map(JSONValue.money) ?? .null,
            "createdAt": .time(createdAt),
            "updatedAt": .time(updatedAt),
            "grantedAt": .time(grantedAt),
            "finishedAt": .time(finishedAt),
            "refundedAt": .time(refundedAt),
        ])
    }
}

