import Foundation
import LedgerCore
import LedgerPostgres

/// How the finance answers are written, shared by the API and the CLI's `--json`.
extension RevenueRow {
    public var json: JSONValue {
        var members: [String: JSONValue] = [
            "currency": .string(currency),
            "granted": .object(["count": .int(grantedCount), "amount": .int(grantedAmount)]),
            "refunded": .object(["count": .int(refundedCount), "amount": .int(refundedAmount)]),
            "net": .int(netAmount),
        ]
        for (dimension, value) in group where dimension != .currency {
            members[dimension == .product ? "productId" : dimension.rawValue] = .string(value)
        }
        return .object(members)
    }
}

extension ReconciliationRow {
    public var json: JSONValue {
        var members: [String: JSONValue] = [
            "result": .string(result.rawValue),
            "transactionId": .text(transactionId),
            "orderId": .text(ledger?.orderId),
            "line": line.map { .int(Int64($0)) } ?? .null,
            "ledger": ledger.map { side in
                .object(["orderId": .string(side.orderId), "state": .string(side.state.rawValue),
                         "productId": .string(side.productId), "amount": .money(side.amount)])
            } ?? .null,
            "provider": provider.map { listed in
                .object(["productId": .string(listed.productId), "amount": .money(listed.amount),
                         "status": .string(listed.status.rawValue), "occurredAt": .time(listed.occurredAt)])
            } ?? .null,
        ]
        if let problem { members["problem"] = .string(problem) }
        return .object(members)
    }
}

extension ReconciliationSummary {
    public var json: JSONValue {
        var members: [String: JSONValue] = [:]
        for result in ReconciliationResult.allCases {
            members[result.rawValue] = .object([
                "count": .int(Int64(counts[result] ?? 0)),
                "amounts": .object((amounts[result] ?? [:]).mapValues { JSONValue.int($0) }),
            ])
        }
        return .object(members)
    }
}

extension Anomaly {
    public func json(now: Date) -> JSONValue {
        .object([
            "kind": .string(kind.rawValue), "orderId": .string(orderId), "accountId": .string(accountId),
            "state": .string(state), "since": .time(since), "ageSeconds": .int(Int64(max(0, now.timeIntervalSince(since)))),
            "detail": .string(detail),
        ])
    }
}
