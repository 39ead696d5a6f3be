import ArgumentParser
import Foundation
import LedgerCore
import LedgerHTTP
import LedgerPostgres

/// `ledger history ORDER_ID`: what happened to one order, event by event, as of now or a past moment. The history
/// is read page by page (as the API serves it) and printed as it comes, so a long one needs the memory of a page.
struct HistoryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history", abstract: "Print the timeline of one order and the order it folds to.")

    @Argument(help: "The order id.") var orderId: String
    @Option(name: .customLong("as-of"), help: """
        Only what had been recorded by then: an RFC 3339 time, or a date (YYYY-MM-DD: to the end of that day, UTC), \
        as the finance commands take.
        """) var asOf: String?
    @Flag(help: "Print the whole history as JSON: the API's pages joined (GET /v1/orders/{orderId}/history).") var json = false
    @Option(name: .customLong("page-size"), help: ArgumentHelp("Events read per query.", visibility: .hidden))
    var pageSize = 1000
    @OptionGroup var database: DatabaseOptions

    func validate() throws {
        guard (1...100_000).contains(pageSize) else { throw ValidationError("--page-size must be from 1 to 100000") }
    }

    func run() async throws {
        let asOf = try self.asOf.map { text in
            if case .instant(let time)? = PeriodBound(text) { return time }
            // A date: the whole day, everything recorded before the next one began (UTC; to the microsecond, as
            // PostgreSQL keeps times).
            guard case .day(let day)? = PeriodBound(text), let start = RFC3339.parse(day + "T00:00:00Z") else {
                throw ValidationError("--as-of must be \(PeriodBound.grammar)")
            }
            return start.addingTimeInterval(86_400 - 0.000_001)
        }
        let (orderId, json, pageSize) = (orderId, json, pageSize)
        try await database.withDatabaseAndLedger { database, opened in
            let ledger = opened.ledger
            guard var page = try await ledger.history(orderId, asOf: asOf, after: 0, limit: pageSize) else {
                throw CommandFailure("the ledger has never seen order \(orderId) (in \(database.name))")
            }
            let printer = try HistoryPrinter(orderId: orderId, asOf: asOf, json: json)
            guard try printer.begin(page) else { return }
            while true {
                try printer.add(page)
                guard let next = page.next,
                      let following = try await ledger.history(orderId, asOf: asOf, after: next, limit: pageSize)
                else { break }
                page = following
            }
            try printer.finish(order: page.order)
        }
    }
}

/// The human form of an order's history (one line per event, then the resulting order), or the whole history's
/// JSON, printed page by page.
final class HistoryPrinter {
    let orderId: String
    let asOf: Date?
    let listing: PagedListing

    init(orderId: String, asOf: Date?, json: Bool) throws {
        self.orderId = orderId
        self.asOf = asOf
        let asOfJSON = asOf.map { JSONValue.string(RFC3339.format($0)) } ?? .null
        let prefix = "{\"asOf\":\(asOfJSON.canonicalJSON),\"events\":["
        listing = try PagedListing(header: HistoryTable.header, format: json ? .json : .table, jsonPrefix: prefix)
    }

    /// The heading; false when the order had no events yet (as of then), which is all there is to print.
    func begin(_ first: HistoryPage) throws -> Bool {
        guard listing.format == .table else { return true }
        let asOf = self.asOf.map { " as of \(RFC3339.format($0))" } ?? ""
        guard first.order != nil else {
            try StandardOutput.line("order \(orderId)\(asOf): no events yet\n")
            return false
        }
        try StandardOutput.line("order \(orderId)\(asOf)\n")
        return true
    }

    func add(_ page: HistoryPage) throws {
        try listing.add(rows: page.entries.map(HistoryTable.row), json: page.entries.map(\.json))
    }

    func finish(order: Order?) throws {
        guard listing.format == .table else {
            let orderJSON = (order?.json ?? .null).canonicalJSON
            try listing.finish(jsonSuffix: "],\"order\":\(orderJSON),\"orderId\":\(JSONValue.string(orderId).canonicalJSON)}")
            return
        }
        try listing.finish()
        guard let order else { return }
        try StandardOutput.line("\n" + HistoryTable.resulting(order).rendered + "\n")
    }
}

/// The columns of `ledger history`.
enum HistoryTable {
    static let header = ["POSITION", "RECORDED AT", "VERSION", "TYPE", "ACTOR", "STATE AFTER", "DATA"]

    static func row(_ entry: HistoryEntry) -> [String] {
        [
            String(entry.event.position), RFC3339.format(entry.event.recordedAt), String(entry.event.version),
            entry.event.type, entry.event.metadata["actor"]?.text ?? "-", entry.stateAfter?.rawValue ?? "-",
            summary(entry.event.data),
        ]
    }

    static func resulting(_ order: Order) -> Table {
        let amount = order.amount.formatted
        return Table(["ORDER", "STATE", "VERSION", "ACCOUNT", "PRODUCT", "AMOUNT", "TRANSACTION", "FLAGS"], [[
            order.orderId, order.state.rawValue, String(order.version), order.accountId, order.productId, amount,
            order.transactionId ?? "-", order.flags.isEmpty ? "-" : order.flags.map(\.rawValue).joined(separator: ","),
        ]])
    }

    /// The event's data on one line, `key=value` in key order; money as people read it (`4.99 USD`); nested objects
    /// as JSON. A value
    /// longer than 80 characters (a provider's signed message kept as evidence) is cut to its start and its length:
    /// `--json` prints it whole.
    static func summary(_ data: JSONValue) -> String {
        guard case .object(let members) = data else { return data.canonicalJSON }
        return members.keys.sorted().map { key in
            let value = members[key] ?? .null
            if case .int(let amount)? = value["value"], case .string(let currency)? = value["currency"] {
                return "\(key)=" + Money(value: amount, currency: currency).formatted
            }
            let text = value.text ?? value.canonicalJSON
            return "\(key)=" + (text.count > 80 ? "\(text.prefix(32))… (\(text.count) characters)" : text)
        }.joined(separator: " ")
    }
}

extension JSONValue {
    /// A string's text, or nil for any other value.
    var text: String? {
        if case .string(let text) = self { text } else { nil }
    }
}

/// A command that ran but has a negative answer: printed as one line, exit status 1.
struct CommandFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
