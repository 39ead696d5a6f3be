/// A provider file read from chunks of bytes, in constant memory: the CSV records (`CSVReader`, so quoted line breaks,
/// CR LF and a byte-order mark are read as RFC 4180 says, and a record over 64 KiB refuses the file), the first one
/// the header, every other non-blank one a `ProviderLine` — good or malformed, never dropped.
public struct ProviderFileReader: Sendable {
    private var csv: CSVReader
    private var file: ProviderFile?

    public init(maximumRecordBytes: Int = CSVReader.defaultMaximumRecordBytes) {
        csv = CSVReader(maximumRecordBytes: maximumRecordBytes)
    }

    /// The lines that `chunk` completes. Throws when the header lacks columns or the CSV cannot be read on.
    public mutating func feed(_ chunk: [UInt8]) throws(ProviderFileError) -> [ProviderLine] {
        let records: [CSVRecord]
        do {
            records = try csv.feed(chunk)
        } catch {
            throw .unreadable(error)
        }
        return try lines(records)
    }

    /// The last line, if any; throws when the file had no header at all.
    public mutating func finish() throws(ProviderFileError) -> [ProviderLine] {
        let last: CSVRecord?
        do {
            last = try csv.finish()
        } catch {
            throw .unreadable(error)
        }
        let lines = try lines(last.map { [$0] } ?? [])
        guard file != nil else { throw .missingColumns(ProviderFile.columns) }
        return lines
    }

    /// Reads a whole file held in memory slice by slice, only to find whether it can be read: the header's columns
    /// and the CSV itself (not whether each line is a good transaction). For callers that must refuse a bad file
    /// before they start answering.
    public static func check(_ bytes: [UInt8], sliceSize: Int = 64 * 1024) throws(ProviderFileError) {
        var reader = ProviderFileReader()
        var start = 0
        while start < bytes.count {
            let end = min(bytes.count, start + max(1, sliceSize))
            _ = try reader.feed(Array(bytes[start..<end]))
            start = end
        }
        _ = try reader.finish()
    }

    private mutating func lines(_ records: [CSVRecord]) throws(ProviderFileError) -> [ProviderLine] {
        var lines: [ProviderLine] = []
        for record in records {
            guard let file else {
                file = try ProviderFile(header: record.fields)
                continue
            }
            if record.isBlank { continue }
            lines.append(ProviderLine(line: record.line, transaction: file.parse(record.fields)))
        }
        return lines
    }
}

/// One data record of a provider file: the line where it starts (1 is the header) and what it says.
public struct ProviderLine: Sendable, Hashable {
    public var line: Int
    public var transaction: Result<ProviderTransaction, ProviderFileError>

    public init(line: Int, transaction: Result<ProviderTransaction, ProviderFileError>) {
        self.line = line
        self.transaction = transaction
    }
}
