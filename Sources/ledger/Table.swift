import Foundation
import LedgerCore

/// A plain-text table with aligned columns, for the CLI's human output.
struct Table {
    let header: [String]
    let rows: [[String]]

    init(_ header: [String], _ rows: [[String]]) {
        self.header = header
        self.rows = rows
    }

    var rendered: String {
        let all = [header] + rows
        let widths = header.indices.map { column in all.map { $0[column].count }.max() ?? 0 }
        return all.map { row in
            row.enumerated().map { column, cell in
                column == row.count - 1 ? cell : cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }.joined(separator: "\n")
    }
}

/// Times in CLI output: the same RFC 3339 text the API uses.
func RFC3339Text(_ date: Date) -> String { RFC3339.format(date) }
