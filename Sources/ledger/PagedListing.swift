import Foundation
import LedgerCore

/// Prints a listing that arrives page by page, holding one page at a time, so that a command prints everything
/// however long the listing is, in the memory of a page:
/// - a table or CSV gets its header once; a table's columns are aligned within each page (as psql does with
///   `FETCH_COUNT`), so a listing of one page looks exactly as it did when it was printed whole;
/// - JSON is the same text the whole listing's canonical JSON would be: `prefix`, the elements comma-separated, and
///   the suffix given at the end (canonical JSON sorts keys, so the array's key and those before it come first).
final class PagedListing {
    enum Format { case table, csv, json }

    let header: [String]
    let format: Format
    /// What a table with no row says instead of a header alone (CSV keeps its header: a file a program reads).
    let none: String?
    private var headerPrinted = false
    private var elementsPrinted = false

    init(header: [String], format: Format, jsonPrefix: String = "", none: String? = nil) throws {
        self.header = header
        self.format = format
        self.none = none
        if format == .json { try StandardOutput.line(jsonPrefix, terminator: "") }
    }

    /// One page: its rows for a table or CSV, its elements for JSON.
    func add(rows: @autoclosure () -> [[String]], json: @autoclosure () -> [JSONValue]) throws {
        switch format {
        case .json:
            for element in json() {
                try StandardOutput.line((elementsPrinted ? "," : "") + element.canonicalJSON, terminator: "")
                elementsPrinted = true
            }
        case .csv:
            let rows = rows()
            if !headerPrinted { try StandardOutput.line(CSVWriter.record(header)) }
            headerPrinted = true
            for row in rows { try StandardOutput.line(CSVWriter.record(row)) }
        case .table:
            let rows = rows()
            // An empty page prints nothing: the header comes with the first row, or `finish` says there was none.
            guard !rows.isEmpty || (!headerPrinted && none == nil) else { return }
            var rendered = Table(header, rows).rendered
            if headerPrinted, let endOfHeader = rendered.firstIndex(of: "\n") {
                rendered = String(rendered[rendered.index(after: endOfHeader)...])
            }
            headerPrinted = true
            try StandardOutput.line(rendered)
        }
    }

    /// Ends the listing: JSON's `suffix` and a newline; a CSV that had no page prints its header alone, a table
    /// `none` (else its header alone).
    func finish(jsonSuffix: String = "") throws {
        switch format {
        case .json: try StandardOutput.line(jsonSuffix)
        case .table where !headerPrinted && none != nil: try StandardOutput.line(none ?? "")
        case .csv, .table: if !headerPrinted { try add(rows: [], json: []) }
        }
    }
}
