import ArgumentParser
import Foundation
import LedgerCore
import LedgerHTTP
import LedgerPostgres

/// `ledger history ORDER_ID`: what happened to one order, event by event, as of now or a past moment.
struct HistoryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history", abstract: "Print the timeline of one order and the order it folds to.")

    @Argument(help: "The order id.") var orderId: String
    @Option(name: .customLong("as-of"), help: "Only what had been recorded by this RFC 3339 time.") var asOf: String?
    @Flag(help: "Print the same JSON as GET /v1/orders/{orderId}/history.") var json = false
    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        let asOf = try self.asOf.map { text in
            guard let date = RFC3339.parse(text) else {
                throw ValidationError("--as-of must be an RFC 3339 time, e.g. 2026-11-22T10:00:00Z")
            }
            return date
        }
        let orderId = orderId
        let history = try await database.withMigratedClient { client in
            try await Ledger(client: client).history(orderId, asOf: asOf)
        }
        guard let history else { throw CommandFailure("the ledger has never seen order \(orderId)") }
        print(json ? history.json.canonicalJSON : HistoryTable.render(history))
    }
}

/// The human form of an order's history: one line per event, then the resulting order.
enum HistoryTable {
    static func render(_ history: OrderHistory) -> String {
        let events = Table(
            ["POSITION", "RECORDED AT", "VERSION", "TYPE", "ACTOR", "STATE AFTER", "DATA"],
            history.entries.map { entry in
                [
                    String(entry.event.position), RFC3339.format(entry.event.recordedAt), String(entry.event.version),
                    entry.event.type, entry.event.metadata["actor"]?.text ?? "-", entry.stateAfter?.rawValue ?? "-",
                    summary(entry.event.data),
                ]
            })
        let asOf = history.asOf.map { " as of \(RFC3339.format($0))" } ?? ""
        guard let order = history.order else {
            return "order \(history.orderId)\(asOf): no events yet\n"
        }
        let amount = "\(order.amount.value) \(order.amount.currency)"
        let resulting = Table(["ORDER", "STATE", "VERSION", "ACCOUNT", "PRODUCT", "AMOUNT", "TRANSACTION", "FLAGS"], [[
            order.orderId, order.state.rawValue, String(order.version), order.accountId, order.productId, amount,
            order.transactionId ?? "-", order.flags.isEmpty ? "-" : order.flags.map(\.rawValue).joined(separator: ","),
        ]])
        return "order \(history.orderId)\(asOf)\n\n\(events.rendered)\n\n\(resulting.rendered)\n"
    }

    /// The event's data on one line, `key=value` in key order; money as `499 USD`; nested objects as JSON.
    static func summary(_ data: JSONValue) -> String {
        guard case .object(let members) = data else { return data.canonicalJSON }
        return members.keys.sorted().map { key in
            let value = members[key]!
            if case .int(let amount)? = value["value"], case .string(let currency)? = value["currency"] {
                return "\(key)=\(amount) \(currency)"
            }
            return "\(key)=\(value.text ?? value.canonicalJSON)"
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
