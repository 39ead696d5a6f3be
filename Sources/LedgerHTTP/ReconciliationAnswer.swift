import Hummingbird
import LedgerCore
import LedgerPostgres
import NIOCore

/// How `POST /v1/reconciliations` answers without ever holding an unbounded answer: JSON carries the summary and at
/// most `maximumRows` rows that are not matched; `Accept: text/csv` streams every row, matched ones too.
enum ReconciliationAnswer {
    /// Rows the JSON answer lists at most (~400 KiB of JSON): enough to read by eye, bounded however long the file.
    static let maximumRows = 1000
    /// The CSV answer is written in pieces of about this size, so a million rows are not a million writes.
    static let csvPieceBytes = 64 * 1024

    /// True when the caller asks for CSV: the Accept header names `text/csv` (quality values are not weighed).
    static func wantsCSV(_ accept: String?) -> Bool {
        guard let accept else { return false }
        return accept.split(separator: ",").contains { $0.hasMediaType("text/csv") }
    }

    /// Every row as CSV (`ReconciliationRow.csvHeader`, then one record per row), written as `reconcile` emits them.
    /// `reconcile` runs once the 200 has started, so the caller must have refused a bad file or period before; an
    /// error now (the database gone) can only cut the answer short, which HTTP clients see as an incomplete body.
    static func csv(
        _ reconcile: @Sendable @escaping ((ReconciliationRow) async throws -> Void) async throws -> Void
    ) -> Response {
        Response(status: .ok, headers: [.contentType: "text/csv; charset=utf-8"], body: ResponseBody { writer in
            var pending = CSVWriter.record(ReconciliationRow.csvHeader) + "\n"
            try await reconcile { row in
                pending += CSVWriter.record(row.csvFields) + "\n"
                if pending.utf8.count >= csvPieceBytes {
                    try await writer.write(ByteBuffer(string: pending))
                    pending = ""
                }
            }
            try await writer.write(ByteBuffer(string: pending))
            try await writer.finish(nil)
        })
    }
}

/// The JSON answer's rows: the first `ReconciliationAnswer.maximumRows` that are not matched, in file order, and how
/// many more there were (`rowsOmitted`, with `truncated`), so memory holds at most that many however long the file.
struct ReconciliationListing {
    private(set) var rows: [JSONValue] = []
    private(set) var omitted = 0

    mutating func add(_ row: ReconciliationRow) {
        guard row.result != .matched else { return }
        if rows.count < ReconciliationAnswer.maximumRows { rows.append(row.json) } else { omitted += 1 }
    }

    func json(summary: ReconciliationSummary) -> JSONValue {
        .object([
            "summary": summary.json, "rows": .array(rows), "truncated": .bool(omitted > 0), "rowsOmitted": .int(Int64(omitted)),
        ])
    }
}

/// A body held in memory, handed to `Reconciliation.run` in 64 KiB slices as a file would be, so the reader's
/// output per chunk stays small.
struct ByteChunks: AsyncSequence, Sendable {
    let bytes: [UInt8]
    static let size = 64 * 1024

    struct AsyncIterator: AsyncIteratorProtocol {
        let bytes: [UInt8]
        var start = 0
        mutating func next() async -> [UInt8]? {
            guard start < bytes.count else { return nil }
            let end = Swift.min(bytes.count, start + ByteChunks.size)
            defer { start = end }
            return Array(bytes[start..<end])
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(bytes: bytes) }
}
