import Foundation

/// A provider's transaction list: CSV (read by `CSVReader`, see `ProviderFileReader`) with a header record. Columns:
/// `transaction_id,product_id,amount_minor,currency,status,occurred_at` in any order; extra columns are ignored.
public struct ProviderFile: Sendable {
    public static let columns = ["transaction_id", "product_id", "amount_minor", "currency", "status", "occurred_at"]

    /// Where each of `columns` is in a record, in the order of `columns`.
    let indices: [Int]

    /// Reads the header record; names the required columns it lacks.
    public init(header: [String]) throws(ProviderFileError) {
        let names = header.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        var indices: [Int] = []
        var missing: [String] = []
        for column in Self.columns {
            if let index = names.firstIndex(of: column) { indices.append(index) } else { missing.append(column) }
        }
        guard missing.isEmpty else { throw .missingColumns(missing) }
        self.indices = indices
    }

    /// One data record as a provider transaction, or why it cannot be one.
    public func parse(_ fields: [String]) -> Result<ProviderTransaction, ProviderFileError> {
        let values = indices.compactMap { index in
            fields.indices.contains(index) ? fields[index].trimmingCharacters(in: .whitespaces) : nil
        }
        guard values.count == Self.columns.count else {
            return .failure(.malformed("expected at least \((indices.max() ?? 0) + 1) fields, found \(fields.count)"))
        }
        // Six values, one per column, as the guard just checked.
        let (transactionId, productId, amountText, currency, statusText, timeText) =
            (values[0], values[1], values[2], values[3], values[4], values[5])
        guard Identifier.isValid(transactionId) else { return .failure(.malformed("transaction_id " + Identifier.rule)) }
        guard Identifier.isValid(productId) else { return .failure(.malformed("product_id " + Identifier.rule)) }
        guard let amount = Int64(amountText), amount >= 0 else {
            return .failure(.malformed("amount_minor must be a whole number of minor units ≥ 0, not \(amountText)"))
        }
        guard currency.utf8.count == 3, currency.utf8.allSatisfy({ (65...90).contains($0) }) else {
            return .failure(.malformed("currency must be three upper-case letters (ISO 4217), not \(currency)"))
        }
        guard let status = ProviderStatus(rawValue: statusText) else {
            return .failure(.malformed("status must be paid or refunded, not \(statusText)"))
        }
        guard let occurredAt = RFC3339.parse(timeText) else {
            return .failure(.malformed("occurred_at must be an RFC 3339 time, not \(timeText)"))
        }
        return .success(ProviderTransaction(
            transactionId: transactionId, productId: productId, amount: Money(value: amount, currency: currency),
            status: status, occurredAt: occurredAt))
    }
}

public enum ProviderStatus: String, Sendable, Hashable {
    case paid, refunded
}

/// One line of a provider's transaction list.
public struct ProviderTransaction: Sendable, Hashable {
    public var transactionId: String
    public var productId: String
    public var amount: Money
    public var status: ProviderStatus
    public var occurredAt: Date

    public init(transactionId: String, productId: String, amount: Money, status: ProviderStatus, occurredAt: Date) {
        self.transactionId = transactionId
        self.productId = productId
        self.amount = amount
        self.status = status
        self.occurredAt = occurredAt
    }
}

public enum ProviderFileError: Error, Sendable, Hashable, CustomStringConvertible {
    case missingColumns([String])
    case malformed(String)
    /// The file is not readable CSV from some line on (an over-long record, an unclosed quote): the whole file is
    /// refused, since no record after it can be trusted.
    case unreadable(CSVError)

    public var description: String {
        switch self {
        case .missingColumns(let columns): "the header row lacks " + columns.joined(separator: ", ")
        case .malformed(let why): why
        case .unreadable(let error): error.description
        }
    }
}
