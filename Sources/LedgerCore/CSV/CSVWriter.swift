import Foundation

/// Writes RFC 4180 CSV records: the one CSV writer of the project (event export, reconciliation rows over HTTP and
/// in the CLI, the CLI's `--csv` tables), so that whatever it writes `CSVReader` reads back field for field.
///
/// A record is returned without its line break; every caller ends lines with LF (what Unix tools and `split` expect;
/// the reader accepts LF and CR LF alike).
///
/// Decided: no guard against spreadsheet formula injection (prefixing `=`, `+`, `-`, `@` with a quote). Values are
/// written exactly, because the export's `canonical` column must be the very bytes that were hashed, and the values
/// that reach these files are ids of `[A-Za-z0-9._:-]`, numbers, times, JSON and fixed messages. Whoever opens an
/// export in a spreadsheet should import its columns as text.
public enum CSVWriter {
    /// Fields joined by commas, each quoted when it must be.
    public static func record(_ fields: [String]) -> String {
        fields.map(field).joined(separator: ",")
    }

    /// A field as written: in double quotes, its quotes doubled, when it holds a comma, a quote or a line break, or
    /// starts with a byte-order mark (which a reader would drop at the start of a file).
    public static func field(_ text: String) -> String {
        let mustQuote = text.unicodeScalars.first == "\u{FEFF}" || text.utf8.contains { byte in
            byte == UInt8(ascii: ",") || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r")
        }
        guard mustQuote else { return text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
