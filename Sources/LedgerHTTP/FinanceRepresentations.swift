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
            // A malformed line's side holds the values that could be read, and only those.
            "provider": providerValues.map { listed in
                var side: [String: JSONValue] = [:]
                side["productId"] = listed.productId.map(JSONValue.string)
                if let amount = listed.amount, let currency = listed.currency {
                    side["amount"] = .money(Money(value: amount, currency: currency))
                } else {
                    side["amountMinor"] = listed.amount.map(JSONValue.int)
                    side["currency"] = listed.currency.map(JSONValue.string)
                }
                side["status"] = listed.status.map { .string($0.rawValue) }
                side["occurredAt"] = listed.occurredAt.map { JSONValue.time($0) }
                return .object(side)
            } ?? .null,
        ]
        if let malformed {
            members["problem"] = .string(malformed.description)
            members["field"] = .string(malformed.field)
        }
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
            "detail": .string(detail), "amount": amount.map(JSONValue.money) ?? .null,
        ])
    }
}

extension SubscriptionReportRow {
    /// A day of the subscription report as the API answers it: counts, and amounts as minor units of `currency`.
    public var json: JSONValue {
        [
            "day": .string(day), "productId": .string(productId), "currency": .string(currency),
            "active": .int(active), "mrr": .int(mrr), "started": .int(started), "renewed": .int(renewed),
            "revenue": .int(revenue), "refunds": .int(refunds), "refunded": .int(refunded),
            "churned": ["voluntary": .int(churnedVoluntary), "billing": .int(churnedBilling), "other": .int(churnedOther)],
        ]
    }
}
