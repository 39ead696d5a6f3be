import ArgumentParser
import Foundation
import LedgerCore
import LedgerHTTP
import LedgerPostgres
import Synchronization

/// How finance commands print: an aligned table by default, or CSV, or the API's JSON.
struct FinanceOutput: ParsableArguments {
    @Flag(help: "Print CSV.") var csv = false
    @Flag(help: "Print the same JSON as the API.") var json = false

    /// A table for people (money as money), CSV for programs (integer minor units in columns named `…_minor`), or
    /// the API's JSON.
    func show(table: Table, csv records: (header: [String], rows: [[String]]), json value: @autoclosure () -> JSONValue) throws {
        if json {
            try StandardOutput.line(value().canonicalJSON)
        } else if csv {
            try StandardOutput.line(([records.header] + records.rows).map(CSVWriter.record).joined(separator: "\n"))
        } else {
            try StandardOutput.line(table.rendered)
        }
    }
}

/// A comma-separated option of known names, each once; an unknown, empty or repeated one is a usage error naming
/// the option, in the API's words.
func names<Value: RawRepresentable<String> & CaseIterable & Hashable>(_ text: String, _ type: Value.Type, option: String) throws -> [Value] {
    do {
        return try NameList.parse(text, as: type)
    } catch {
        throw ValidationError("\(option): \(error)")
    }
}

/// `--from` and `--to` of a finance command: each a date or an RFC 3339 time (`PeriodBound`), both included.
func periodBounds(_ from: String, _ to: String) throws -> (PeriodBound, PeriodBound) {
    guard let start = PeriodBound(from) else { throw ValidationError("--from must be \(PeriodBound.grammar)") }
    guard let end = PeriodBound(to) else { throw ValidationError("--to must be \(PeriodBound.grammar)") }
    // A usage error like any other option's (exit 64), said before the database is opened.
    guard !PeriodBound.isEmpty(from: start, to: end) else { throw ValidationError("--from must not be after --to") }
    return (start, end)
}

/// `ledger report revenue`: granted, refunded and net per group, from the projections.
struct ReportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report", abstract: "Finance reports.", subcommands: [RevenueCommand.self, SubscriptionReportCommand.self])
}

struct RevenueCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "revenue", abstract: "Revenue per day, product, currency and/or provider (never summed across currencies).")

    @Option(help: "Start, included: \(PeriodBound.grammar), in --timezone.") var from: String
    @Option(help: "End, included: \(PeriodBound.grammar), in --timezone.") var to: String
    @Option(name: .customLong("group-by"), help: "Any of day,product,currency,provider.") var groupBy = "day,currency"
    @Option(help: "IANA time zone that decides which day a grant or refund belongs to.") var timezone = "UTC"
    @OptionGroup var output: FinanceOutput
    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        let (start, end) = try periodBounds(from, to)
        let dimensions = try names(groupBy, RevenueDimension.self, option: "--group-by")
        let (from, to, timezone) = (from, to, timezone)
        let rows: [RevenueRow] = try await database.withLedger { opened in
            try await opened.finance.revenue(from: start, to: end, groupBy: dimensions, timeZone: timezone)
        }
        let shown = dimensions.filter { $0 != .currency }
        try output.show(
            table: RevenueTable.table(rows, shown: shown),
            csv: (shown.map(\.rawValue) + ["currency", "granted", "granted_amount_minor", "refunded", "refunded_amount_minor", "net_minor"],
                  rows.map { row in
                      shown.map { row.group[$0] ?? "" } + [row.currency, String(row.grantedCount), String(row.grantedAmount),
                                                             String(row.refundedCount), String(row.refundedAmount), String(row.netAmount)]
                  }),
            json: .object(["from": .string(from), "to": .string(to), "timezone": .string(timezone),
                           "groupBy": .array(dimensions.map { .string($0.rawValue) }), "rows": .array(rows.map(\.json))]))
    }
}

/// `ledger report subscriptions`: active subscriptions, MRR, first purchases, renewals, refunds and churn per day,
/// product and currency (the API's `/v1/reports/subscriptions`).
struct SubscriptionReportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "subscriptions",
        abstract: "Subscriptions per day, product and currency: active, MRR, first purchases, renewals, refunds, churn.")

    @Option(help: "Start, included: \(PeriodBound.grammar), in --timezone.") var from: String
    @Option(help: "End, included: \(PeriodBound.grammar), in --timezone.") var to: String
    @Option(help: "IANA time zone that decides which day a period, a refund or an end belongs to.") var timezone = "UTC"
    @OptionGroup var output: FinanceOutput
    @OptionGroup var database: DatabaseOptions

    static let columns = [
        "day", "product", "currency", "active", "mrr", "started", "renewed", "revenue", "refunds", "refunded",
        "churned_voluntary", "churned_billing", "churned_other",
    ]

    func run() async throws {
        let (start, end) = try periodBounds(from, to)
        let (from, to, timezone) = (from, to, timezone)
        let rows: [SubscriptionReportRow] = try await database.withLedger { opened in
            try await opened.finance.subscriptions(from: start, to: end, timeZone: timezone)
        }
        func money(_ value: Int64, _ currency: String) -> String { Money(value: value, currency: currency).formatted }
        let table = Table(
            ["DAY", "PRODUCT", "CURRENCY", "ACTIVE", "MRR", "STARTED", "RENEWED", "REVENUE", "REFUNDS", "REFUNDED",
             "CHURNED VOL", "CHURNED BILLING", "CHURNED OTHER"],
            rows.map { row in
                [row.day, row.productId, row.currency, String(row.active), money(row.mrr, row.currency), String(row.started),
                 String(row.renewed), money(row.revenue, row.currency), String(row.refunds), money(row.refunded, row.currency),
                 String(row.churnedVoluntary), String(row.churnedBilling), String(row.churnedOther)]
            },
            numeric: Set(3..<13))
        try output.show(
            table: table,
            csv: (Self.columns.map { ["mrr", "revenue", "refunded"].contains($0) ? $0 + "_minor" : $0 }, rows.map { row in
                [row.day, row.productId, row.currency] + [
                    row.active, row.mrr, row.started, row.renewed, row.revenue, row.refunds, row.refunded,
                    row.churnedVoluntary, row.churnedBilling, row.churnedOther,
                ].map(String.init)
            }),
            json: .object(["from": .string(from), "to": .string(to), "timezone": .string(timezone), "rows": .array(rows.map(\.json))]))
    }
}

/// The revenue table people read: amounts as money, and a total per currency when there is more than one row of it.
enum RevenueTable {
    static func exactSum(_ values: [Int64]) -> Int64? {
        var sum: Int64 = 0
        for value in values {
            let (next, overflow) = sum.addingReportingOverflow(value)
            guard !overflow else { return nil }
            sum = next
        }
        return sum
    }

    static func table(_ rows: [RevenueRow], shown: [RevenueDimension]) -> Table {
        func line(_ labels: [String], _ currency: String, granted: Int64, grantedAmount: Int64, refunded: Int64,
                  refundedAmount: Int64) -> [String] {
            labels + [currency, String(granted), Money(value: grantedAmount, currency: currency).formatted, String(refunded),
                      Money(value: refundedAmount, currency: currency).formatted,
                      Money(value: grantedAmount &- refundedAmount, currency: currency).formatted]
        }
        var lines = rows.map { row in
            line(shown.map { row.group[$0] ?? "" }, row.currency, granted: row.grantedCount, grantedAmount: row.grantedAmount,
                 refunded: row.refundedCount, refundedAmount: row.refundedAmount)
        }
        for currency in Set(rows.map(\.currency)).sorted() {
            let ofCurrency = rows.filter { $0.currency == currency }
            guard ofCurrency.count > 1 else { continue }
            // Each row's sums are exact; a total past Int64 is left out rather than wrapped.
            guard let granted = exactSum(ofCurrency.map(\.grantedAmount)),
                  let refunded = exactSum(ofCurrency.map(\.refundedAmount))
            else { continue }
            lines.append(line(["TOTAL"] + Array(repeating: "", count: max(0, shown.count - 1)), currency,
                              granted: ofCurrency.reduce(0) { $0 + $1.grantedCount }, grantedAmount: granted,
                              refunded: ofCurrency.reduce(0) { $0 + $1.refundedCount }, refundedAmount: refunded))
        }
        return Table(shown.map { $0.rawValue.uppercased() } + ["CURRENCY", "GRANTED", "GRANTED AMOUNT", "REFUNDED", "REFUNDED AMOUNT", "NET"],
                     lines, numeric: Set((shown.count + 1)..<(shown.count + 6)))
    }
}

/// `ledger reconcile FILE.csv`: compares a provider's transaction list with the ledger, streaming the file.
/// Exit statuses (sysexits), so that cron can tell them apart: 0 every row matched; 1 differences found; 64 a usage
/// error; 65 the file is not a readable provider file (no header, a record over 64 KiB, a quote never closed),
/// naming the line; 66 the file cannot be opened.
struct ReconcileCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reconcile", abstract: "Reconcile a provider transaction list (CSV) against the ledger.",
        discussion: "Exit status: 0 all matched, 1 differences found, 64 usage error, 65 unreadable file contents, 66 file cannot be opened.")

    @Argument(help: "CSV with a header: transaction_id,product_id,amount_minor,currency,status,occurred_at") var file: String
    @Option(help: "app_store, alipay, wechat_pay or other.") var provider: String
    @Option(help: "Start of the period, included: \(PeriodBound.grammar), dates in UTC.") var from: String
    @Option(help: "End of the period, included: \(PeriodBound.grammar), dates in UTC.") var to: String
    @Flag(help: "Print every row, matched ones too (default: only the others).") var all = false
    @OptionGroup var output: FinanceOutput
    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        guard let provider = Provider(rawValue: provider) else {
            throw ValidationError("--provider must be one of \(Provider.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        let (start, end) = try periodBounds(from, to)
        guard let handle = FileHandle(forReadingAtPath: file) else {
            try? FileHandle.standardError.write(contentsOf: Data("Error: cannot open \(file)\n".utf8))
            throw ExitCode(66)
        }
        let (output, all) = (output, all)
        let printer = RowPrinter(output: output, all: all)
        let summary: ReconciliationSummary
        do {
            summary = try await database.withLedger { opened in
                try await opened.finance.reconcile(
                    provider: provider, from: start, to: end, chunks: FileChunks(handle: handle), emit: printer.show)
            }
        } catch let error as ProviderFileError {
            // Nothing was printed yet (the whole file is read before the first row). Exit 65 (bad data), not 1: a
            // cron job can tell "the file is unreadable" from "the ledger and the provider differ".
            try? FileHandle.standardError.write(contentsOf: Data("Error: \(file): \(error)\n".utf8))
            throw ExitCode(65)
        }
        try printer.finish(summary)
        if !summary.allMatched { throw ExitCode(1) }
    }
}

/// Prints reconciliation rows as they stream (only non-matched ones unless `all`), then the summary. `--csv` is
/// the same file as the API's `text/csv` answer: a header record, then one record per row. `--json` is one document,
/// as the API's: `{"rows": [...], "summary": {...}}`, a row per line, every row listed (the API lists at most a page).
/// The table has a header line, and its summary goes to standard error.
final class RowPrinter: Sendable {
    let output: FinanceOutput
    let all: Bool
    private let started = Mutex(false)

    static let tableHeader = ["LINE", "RESULT", "TRANSACTION", "ORDER", "LEDGER", "PROVIDER", "PROBLEM"]
    /// The table streams, so its columns cannot be measured first: each has a width that holds its usual values
    /// (a cell wider than that pushes the rest of its line along, never another line's). Tabs had let every line's
    /// columns drift.
    static let tableWidths = [7, 19, 28, 24, 34, 30]

    /// A line of the table: each cell but the last padded to its column's width.
    static func tableLine(_ cells: [String]) -> String {
        cells.enumerated().map { column, cell in
            column < tableWidths.count ? cell.padding(toLength: max(cell.count, tableWidths[column]), withPad: " ", startingAt: 0) : cell
        }.joined(separator: "  ")
    }

    init(output: FinanceOutput, all: Bool) {
        self.output = output
        self.all = all
    }

    func show(_ row: ReconciliationRow) async throws {
        guard all || row.result != .matched else { return }
        let first = try startOnce()
        if output.json {
            try StandardOutput.line((first ? "" : ",") + row.json.canonicalJSON)
            return
        }
        if output.csv {
            try StandardOutput.line(CSVWriter.record(row.csvFields))
            return
        }
        let ledger = row.ledger.map { "\($0.state.rawValue) \($0.productId) \($0.amount.formatted)" } ?? ""
        let provider = row.providerValues.map { side in
            let amount = side.amount.map { value in side.currency.map { Money(value: value, currency: $0).formatted } ?? String(value) }
            return [side.status?.rawValue, side.productId, amount].compactMap { $0 }.joined(separator: " ")
        } ?? ""
        let cells = [row.line.map(String.init) ?? "", row.result.rawValue, row.transactionId ?? "", row.ledger?.orderId ?? "",
                     ledger, provider, row.problem ?? ""]
        try StandardOutput.line(Self.tableLine(cells))
    }

    /// What comes before the first row (the CSV header, the JSON document's opening, the table's header line), once;
    /// true for the first row. At the end when no row is printed: the output is never headerless.
    private func startOnce() throws -> Bool {
        let first = started.withLock { started in
            defer { started = true }
            return !started
        }
        guard first else { return false }
        if output.json {
            try StandardOutput.line("{\"rows\":[")
        } else if output.csv {
            try StandardOutput.line(CSVWriter.record(ReconciliationRow.csvHeader))
        } else {
            try StandardOutput.line(Self.tableLine(Self.tableHeader))
        }
        return true
    }

    func finish(_ summary: ReconciliationSummary) throws {
        _ = try startOnce()
        if output.json {
            try StandardOutput.line("],\"summary\":" + summary.json.canonicalJSON + "}")
            return
        }
        let rows = ReconciliationResult.allCases.map { result in
            [result.rawValue, String(summary.counts[result] ?? 0),
             (summary.amounts[result] ?? [:]).sorted { $0.key < $1.key }.map { Money(value: $0.value, currency: $0.key).formatted }.joined(separator: "; ")]
        }
        try? FileHandle.standardError.write(contentsOf: Data((Table(["RESULT", "COUNT", "AMOUNTS"], rows, numeric: [1]).rendered + "\n").utf8))
    }
}

/// A file read in 64 KiB chunks.
struct FileChunks: AsyncSequence, Sendable {
    let handle: FileHandle
    struct AsyncIterator: AsyncIteratorProtocol {
        let handle: FileHandle
        mutating func next() async throws -> [UInt8]? {
            guard let data = try handle.read(upToCount: 64 * 1024), !data.isEmpty else { return nil }
            return Array(data)
        }
    }
    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(handle: handle) }
}

/// `ledger anomalies`: lost orders and the other cases finance must look at.
struct AnomaliesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "anomalies", abstract: "List lost orders, unfinished grants, refused grants and other anomalies.")

    @Option(help: "Only these kinds (comma-separated): \(AnomalyKind.allCases.map(\.rawValue).joined(separator: ", ")).") var kind: String?
    @Option(name: .customLong("older-than"), help: "Override every kind's threshold, e.g. 90s, 10m, 24h.") var olderThan: String?
    @Option(name: .customLong("page-size"), help: ArgumentHelp("Anomalies read per query.", visibility: .hidden))
    var pageSize = 1000
    @OptionGroup var output: FinanceOutput
    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        let kinds = try names(kind ?? "", AnomalyKind.self, option: "--kind")
        let threshold = try olderThan.map { text in
            guard let duration = ThresholdText.parse(text) else { throw ValidationError("--older-than must look like 90s, 10m, 24h") }
            return duration
        }
        guard (1...100_000).contains(pageSize) else { throw ValidationError("--page-size must be from 1 to 100000") }
        // Page by page, printed as they come: the memory of a page, however many there are.
        let (output, pageSize) = (output, pageSize)
        try await database.withLedger { opened in
            let now = Date()
            let listing = try PagedListing(
                // Money as people read it in the table; minor units and currency in CSV, as in JSON.
                header: ["KIND", "ORDER", "ACCOUNT", "STATE", "SINCE", "AGE"]
                    + (output.csv ? ["AMOUNT_MINOR", "CURRENCY"] : ["AMOUNT"]) + ["DETAIL"],
                format: output.json ? .json : output.csv ? .csv : .table, jsonPrefix: "{\"anomalies\":[",
                none: "no anomalies" + (kinds.isEmpty ? "" : " of kind " + kinds.map(\.rawValue).joined(separator: ", "))
                    + (threshold.map { " older than \(Int($0.seconds)) s" } ?? ""))
            var cursor: AnomalyCursor?
            repeat {
                let page = try await opened.finance.anomalies(kinds: kinds, olderThan: threshold, limit: pageSize, after: cursor)
                try listing.add(
                    rows: page.anomalies.map { anomaly in
                        let amount = output.csv ? [anomaly.amount.map { String($0.value) } ?? "", anomaly.amount?.currency ?? ""]
                            : [anomaly.amount?.formatted ?? "-"]
                        return [anomaly.kind.rawValue, anomaly.orderId, anomaly.accountId, anomaly.state, RFC3339.format(anomaly.since),
                                "\(Int(now.timeIntervalSince(anomaly.since)))s"] + amount + [anomaly.detail]
                    },
                    json: page.anomalies.map { $0.json(now: now) })
                cursor = page.nextCursor
            } while cursor != nil
            try listing.finish(jsonSuffix: "]}")
        }
    }
}
