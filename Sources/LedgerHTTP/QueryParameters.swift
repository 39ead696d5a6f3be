import Foundation
import Hummingbird
import HummingbirdCore
import LedgerCore
import LedgerPostgres

/// A request's query parameters, read with the parameter named in every error.
///
/// Each parameter may be given once: `?groupBy=day&groupBy=product` is refused rather than read as one of the two
/// (which would silently drop the other) or as a list (lists are comma-separated: `groupBy=day,product`).
struct QueryParameters {
    let values: [String: String]
    /// Parameters given more than once, refused by `onlyAllowing` and `string`.
    let repeated: Set<String>

    init(_ request: Request) {
        self.init(request.uri)
    }

    init(_ uri: URI) {
        var values: [String: String] = [:]
        var repeated: Set<String> = []
        for (name, value) in uri.queryParameters {
            if values.updateValue(String(value), forKey: String(name)) != nil { repeated.insert(String(name)) }
        }
        self.values = values
        self.repeated = repeated
    }

    /// A target without a query: the history lane's reads, nearly all of them, parse no `URI` for it.
    static let none = QueryParameters(values: [:], repeated: [])

    private init(values: [String: String], repeated: Set<String>) {
        self.values = values
        self.repeated = repeated
    }

    func onlyAllowing(_ allowed: Set<String>) throws {
        if let unknown = values.keys.sorted().first(where: { !allowed.contains($0) }) {
            throw APIError.invalidRequest(field: unknown, "\(unknown) is not a parameter of this route")
        }
        if let name = repeated.sorted().first { throw Self.givenTwice(name) }
    }

    private static func givenTwice(_ name: String) -> APIError {
        .invalidRequest(field: name, "\(name) is given more than once; give it once (a list of names is one parameter, comma-separated)")
    }

    func string(_ name: String) throws -> String? {
        guard !repeated.contains(name) else { throw Self.givenTwice(name) }
        guard let value = values[name], !value.isEmpty else { return nil }
        guard value.utf8.count <= 256 else { throw APIError.invalidRequest(field: name, "\(name) is too long") }
        return value
    }

    /// An id (an account, or an order as a cursor), held to the rule of the ids it is compared with: one that breaks
    /// it can match nothing, and a silent empty page would hide the caller's mistake.
    func id(_ name: String, orderRule: Bool = false) throws -> String? {
        guard let value = try string(name) else { return nil }
        let (valid, rule) = orderRule
            ? (Identifier.isValidOrderId(value), Identifier.orderRule) : (Identifier.isValid(value), Identifier.rule)
        guard valid else { throw APIError.invalidRequest(field: name, "\(name) " + rule) }
        return value
    }

    func integer(_ name: String, in range: ClosedRange<Int64>) throws -> Int64? {
        guard let text = try string(name) else { return nil }
        guard let value = Int64(text), range.contains(value) else {
            throw APIError.invalidRequest(field: name, "\(name) must be an integer from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }

    func time(_ name: String) throws -> Date? {
        guard let text = try string(name) else { return nil }
        guard let date = RFC3339.parse(text) else {
            throw APIError.invalidRequest(field: name, "\(name) must be an RFC 3339 time, e.g. 2026-11-22T13:05:09Z")
        }
        return date
    }

    /// A calendar date that must be given.
    /// One end of a period (`PeriodBound`): a date or an RFC 3339 time.
    func periodBound(_ name: String) throws -> PeriodBound {
        guard let text = try string(name) else {
            throw APIError.invalidRequest(field: name, "\(name) is required: \(PeriodBound.grammar)")
        }
        guard let bound = PeriodBound(text) else {
            throw APIError.invalidRequest(field: name, "\(name) must be \(PeriodBound.grammar)")
        }
        return bound
    }
}
