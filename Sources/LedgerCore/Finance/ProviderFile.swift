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

    /// One data record as a provider transaction, or why it cannot be one: the first field that could not be read,
    /// and every value that could (finance finds the payment by its transaction id without opening the file).
    public func parse(_ fields: [String]) -> Result<ProviderTransaction, ProviderFileError> {
        let values = indices.compactMap { index in
            fields.indices.contains(index) ? fields[index].trimmingCharacters(in: .whitespaces) : nil
        }
        guard values.count == Self.columns.count else {
            return .failure(.malformed(MalformedRecord(
                field: "record", reason: "expected at least \((indices.max() ?? 0) + 1) fields, found \(fields.count)",
                values: ProviderRecordValues())))
        }
        // Six values, one per column, as the guard just checked.
        let (transactionId, productId, amountText, currency, statusText, timeText) =
            (values[0], values[1], values[2], values[3], values[4], values[5])
        var read = ProviderRecordValues()
        var failure: (field: String, reason: String)?
        func check(_ valid: Bool, _ field: String, _ reason: @autoclosure () -> String) {
            if !valid, failure == nil { failure = (field, reason()) }
        }
        read.transactionId = Identifier.isValid(transactionId) ? transactionId : nil
        check(read.transactionId != nil, "transaction_id", Identifier.rule)
        read.productId = Identifier.isValid(productId) ? productId : nil
        check(read.productId != nil, "product_id", Identifier.rule)
        read.amount = Int64(amountText).flatMap { $0 >= 0 ? $0 : nil }
        check(read.amount != nil, "amount_minor", "must be a whole number of minor units ≥ 0, not \(amountText)")
        let isCurrency = currency.utf8.count == 3 && currency.utf8.allSatisfy { (65...90).contains($0) }
        read.currency = isCurrency ? currency : nil
        check(isCurrency, "currency", "must be three upper-case letters (ISO 4217), not \(currency)")
        read.status = ProviderStatus(rawValue: statusText)
        check(read.status != nil, "status", "must be paid or refunded, not \(statusText)")
        read.occurredAt = RFC3339.parse(timeText)
        check(read.occurredAt != nil, "occurred_at", "must be an RFC 3339 time, not \(timeText)")
        guard failure == nil, let transaction = read.transaction else {
            let (field, reason) = failure ?? ("record", "is incomplete")
            return .failure(.malformed(MalformedRecord(field: field, reason: reason, values: read)))
        }
        return .success(transaction)
    }
}

/// What a record of a provider file says, each value as far as it could be read.
public struct ProviderRecordValues: Sendable, Hashable {
    public var transactionId: String?
    public var productId: String?
    public var amount: Int64?
    public var currency: String?
    public var status: ProviderStatus?
    public var occurredAt: Date?

    public init(
        transactionId: String? = nil, productId: String? = nil, amount: Int64? = nil, currency: String? = nil,
        status: ProviderStatus? = nil, occurredAt: Date? = nil
    ) {
        self.transactionId = transactionId
        self.productId = productId
        self.amount = amount
        self.currency = currency
        self.status = status
        self.occurredAt = occurredAt
    }

    /// The transaction, when every value was read.
    public var transaction: ProviderTransaction? {
        guard let transactionId, let productId, let amount, let currency, let status, let occurredAt else { return nil }
        return ProviderTransaction(
            transactionId: transactionId, productId: productId, amount: Money(value: amount, currency: currency),
            status: status, occurredAt: occurredAt)
    }
}

/// A record that is not a transaction: the first field that could not be read (`record` when fields are missing),
/// why, and the values that could be.
public struct MalformedRecord: Sendable, Hashable, CustomStringConvertible {
    public var field: String
    public var reason: String
    public var values: ProviderRecordValues

    public init(field: String, reason: String, values: ProviderRecordValues) {
        self.field = field
        self.reason = reason
        self.values = values
    }

    public var description: String { field == "record" ? reason : "\(field) \(reason)" }
}

public enum ProviderStatus: String, Sendable, Hashable {
    case paid, refunded
}

/// One line of a provider's transaction list.
public struct ProviderTransaction: Sendable, Hashable {
    /// The transaction as the values of its record.
    public var values: ProviderRecordValues {
        ProviderRecordValues(
            transactionId: transactionId, productId: productId, amount: amount.value, currency: amount.currency,
            status: status, occurredAt: occurredAt)
    }

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
    case malformed(MalformedRecord)
    /// The file is not readable CSV from some line on (an over-long record, an unclosed quote): the whole file is
    /// refused, since no record after it can be trusted.
    case unreadable(CSVError)

    public var description: String {
        switch self {
        case .missingColumns(let columns): "the header row lacks " + columns.joined(separator: ", ")
        case .malformed(let record): record.description
        case .unreadable(let error): error.description
        }
    }
}
