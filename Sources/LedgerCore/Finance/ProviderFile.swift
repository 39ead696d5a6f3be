import Foundation

/// A provider's transaction list (CSV with a header row), read line by line so a file of any size needs only one
/// line in memory. Columns: `transaction_id,product_id,amount_minor,currency,status,occurred_at` in any order;
/// extra columns are ignored; fields may be double-quoted (`""` inside quotes is a quote).
public struct ProviderFile: Sendable {
    public static let columns = ["transaction_id", "product_id", "amount_minor", "currency", "status", "occurred_at"]

    /// Where each required column is in a line.
    let indices: [Int]

    /// Reads the header line; names the required columns it lacks.
    public init(header: String) throws(ProviderFileError) {
        let names = Self.fields(header).map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        let missing = Self.columns.filter { !names.contains($0) }
        guard missing.isEmpty else { throw .missingColumns(missing) }
        indices = Self.columns.map { names.firstIndex(of: $0)! }
    }

    /// One data line as a provider transaction, or why it cannot be one.
    public func parse(_ line: String) -> Result<ProviderTransaction, ProviderFileError> {
        let fields = Self.fields(line)
        guard fields.count > indices.max()! else {
            return .failure(.malformed("expected at least \(indices.max()! + 1) fields, found \(fields.count)"))
        }
        let value = { (column: Int) in fields[indices[column]].trimmingCharacters(in: .whitespaces) }
        let transactionId = value(0), productId = value(1)
        guard Identifier.isValid(transactionId) else { return .failure(.malformed("transaction_id " + Identifier.rule)) }
        guard Identifier.isValid(productId) else { return .failure(.malformed("product_id " + Identifier.rule)) }
        guard let amount = Int64(value(2)), amount >= 0 else {
            return .failure(.malformed("amount_minor must be a whole number of minor units ≥ 0, not \(value(2))"))
        }
        let currency = value(3)
        guard currency.utf8.count == 3, currency.utf8.allSatisfy({ (65...90).contains($0) }) else {
            return .failure(.malformed("currency must be three upper-case letters (ISO 4217), not \(currency)"))
        }
        guard let status = ProviderStatus(rawValue: value(4)) else {
            return .failure(.malformed("status must be paid or refunded, not \(value(4))"))
        }
        guard let occurredAt = RFC3339.parse(value(5)) else {
            return .failure(.malformed("occurred_at must be an RFC 3339 time, not \(value(5))"))
        }
        return .success(ProviderTransaction(
            transactionId: transactionId, productId: productId, amount: Money(value: amount, currency: currency),
            status: status, occurredAt: occurredAt))
    }

    /// Splits a CSV line into fields, honouring double quotes.
    static func fields(_ line: String) -> [String] {
        var fields: [String] = []
        var field = ""
        var quoted = false
        var iterator = line.makeIterator()
        while let character = iterator.next() {
            switch (character, quoted) {
            case ("\"", true):
                // A doubled quote inside quotes is a literal quote; a single one closes the quotes.
                var lookahead = iterator
                if lookahead.next() == "\"" { field.append("\""); iterator = lookahead } else { quoted = false }
            case ("\"", false) where field.isEmpty: quoted = true
            case (",", false): fields.append(field); field = ""
            default: field.append(character)
            }
        }
        fields.append(field)
        return fields
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

    public var description: String {
        switch self {
        case .missingColumns(let columns): "the header row lacks " + columns.joined(separator: ", ")
        case .malformed(let why): why
        }
    }
}

/// Cuts a stream of bytes into lines (LF or CRLF), keeping only the unfinished line between chunks.
public struct LineSplitter: Sendable {
    private var pending: [UInt8] = []

    public init() {}

    public mutating func feed(_ bytes: some Sequence<UInt8>) -> [String] {
        var lines: [String] = []
        for byte in bytes {
            if byte == UInt8(ascii: "\n") {
                lines.append(take())
            } else {
                pending.append(byte)
            }
        }
        return lines
    }

    /// The last line, if the input did not end with a newline.
    public mutating func finish() -> String? { pending.isEmpty ? nil : take() }

    private mutating func take() -> String {
        if pending.last == UInt8(ascii: "\r") { pending.removeLast() }
        defer { pending.removeAll(keepingCapacity: true) }
        return String(decoding: pending, as: UTF8.self)
    }
}
