import Foundation
import LedgerCore

/// A plain-text table with aligned columns, for the CLI's human output. Counts and amounts (`numeric` columns) are
/// aligned right, so that their digits line up as people compare money; text is aligned left.
struct Table {
    let header: [String]
    let rows: [[String]]
    let numeric: Set<Int>

    init(_ header: [String], _ rows: [[String]], numeric: Set<Int> = []) {
        self.header = header
        self.rows = rows
        self.numeric = numeric
    }

    var rendered: String {
        let all = [header] + rows
        let widths = header.indices.map { column in all.map { $0[column].count }.max() ?? 0 }
        return all.map { row in
            row.enumerated().map { column, cell in
                let pad = String(repeating: " ", count: max(0, widths[column] - cell.count))
                if numeric.contains(column) { return pad + cell }
                return column == row.count - 1 ? cell : cell + pad
            }.joined(separator: "  ")
        }.joined(separator: "\n")
    }
}

/// Times in CLI output: the same RFC 3339 text the API uses.
func RFC3339Text(_ date: Date) -> String { RFC3339.format(date) }
