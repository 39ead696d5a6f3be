/// Reads RFC 4180 CSV from a stream of byte chunks, keeping only the unfinished record between chunks, so a file of
/// any size needs memory for one record. The one CSV reader of the project (provider files for reconciliation, test
/// read-backs of exports).
///
/// The rules: fields are separated by commas; records end with CR LF, LF or a lone CR; a field that starts with a
/// double quote runs to the next lone quote and may hold commas, line breaks and doubled quotes (`""` is one quote);
/// a UTF-8 byte-order mark at the very start is skipped. Two leniencies, as most producers expect: a quote inside
/// an unquoted field is kept as a character, and the last record need not end with a line break.
///
/// Three things refuse the stream, because after them the reader cannot know where records begin: a record longer
/// than `maximumRecordBytes` (so one runaway line — usually a quote left open — cannot exhaust memory), a quote still
/// open at the end, and anything but a comma or a line end after a closing quote. A fourth, a field that is not
/// stream-safe (`StreamSafeText`), because comparing it could take seconds. Each error names the line.
public struct CSVReader: Sendable {
    /// 64 KiB: far above any sane record (a provider line is ~100 bytes), far below memory trouble.
    public static let defaultMaximumRecordBytes = 64 * 1024

    public let maximumRecordBytes: Int

    private enum State: Sendable {
        /// At the start of a field: nothing of it read yet.
        case fieldStart
        case unquoted
        case quoted
        /// A quote inside a quoted field: either the first of a doubled quote or the closing one.
        case quoteInQuoted
    }

    private var state = State.fieldStart
    private var fields: [String] = []
    private var field: [UInt8] = []
    /// Bytes of the current record read so far, its line break excluded.
    private var recordBytes = 0
    /// The line the reader is on (1-based): a quoted line break moves it on, as an editor would count.
    private var line = 1
    private var recordLine = 1
    private var quoteLine = 1
    /// The previous byte was a CR, so an LF now is the second half of a CR LF.
    private var previousWasCR = false
    /// The first bytes of the stream, held until it is known whether they are a byte-order mark; nil once decided.
    private var start: [UInt8]? = []

    private static let byteOrderMark: [UInt8] = [0xEF, 0xBB, 0xBF]
    private static let quote = UInt8(ascii: "\""), comma = UInt8(ascii: ","), cr = UInt8(ascii: "\r"), lf = UInt8(ascii: "\n")

    public init(maximumRecordBytes: Int = CSVReader.defaultMaximumRecordBytes) {
        self.maximumRecordBytes = max(1, maximumRecordBytes)
    }

    /// The records that `chunk` completes, in order. A chunk may end anywhere: inside a field, a quote pair, a CR LF
    /// or a multi-byte UTF-8 character.
    public mutating func feed(_ chunk: [UInt8]) throws(CSVError) -> [CSVRecord] {
        var records: [CSVRecord] = []
        for byte in chunk {
            if var held = start {
                held.append(byte)
                if held == Self.byteOrderMark {
                    start = nil
                } else if Self.byteOrderMark.starts(with: held) {
                    start = held
                } else {
                    start = nil
                    for early in held { try take(early, into: &records) }
                }
                continue
            }
            try take(byte, into: &records)
        }
        return records
    }

    /// The last record, if the stream did not end with a line break; an error if a quote is still open.
    public mutating func finish() throws(CSVError) -> CSVRecord? {
        var records: [CSVRecord] = []
        if let held = start {
            start = nil
            for early in held { try take(early, into: &records) }
        }
        switch state {
        case .quoted: throw .unterminatedQuote(line: quoteLine)
        case .fieldStart, .unquoted, .quoteInQuoted: break
        }
        if recordBytes > 0 { try endRecord(into: &records) }
        return records.last
    }

    /// Every record of a whole text in memory (tests, small inputs).
    public static func records(in bytes: [UInt8], maximumRecordBytes: Int = defaultMaximumRecordBytes) throws(CSVError) -> [CSVRecord] {
        var reader = CSVReader(maximumRecordBytes: maximumRecordBytes)
        var records = try reader.feed(bytes)
        if let last = try reader.finish() { records.append(last) }
        return records
    }

    private mutating func take(_ byte: UInt8, into records: inout [CSVRecord]) throws(CSVError) {
        let afterCR = previousWasCR
        previousWasCR = byte == Self.cr
        if afterCR && byte == Self.lf {
            // The LF of a CR LF: data inside quotes, otherwise the record already ended at the CR.
            if state == .quoted { try append(byte) }
            return
        }
        let lineBreak = byte == Self.cr || byte == Self.lf
        switch state {
        case .fieldStart:
            if byte == Self.quote {
                try count()
                quoteLine = line
                state = .quoted
            } else if byte == Self.comma {
                try count()
                try endField()
            } else if lineBreak {
                try endRecord(into: &records)
            } else {
                try append(byte)
                state = .unquoted
            }
        case .unquoted:
            if byte == Self.comma {
                try count()
                try endField()
            } else if lineBreak {
                try endRecord(into: &records)
            } else {
                try append(byte)
            }
        case .quoted:
            if byte == Self.quote {
                try count()
                state = .quoteInQuoted
            } else {
                try append(byte)
                if lineBreak { line += 1 }
            }
        case .quoteInQuoted:
            if byte == Self.quote {
                try append(byte)
                state = .quoted
            } else if byte == Self.comma {
                try count()
                try endField()
            } else if lineBreak {
                try endRecord(into: &records)
            } else {
                throw .textAfterClosingQuote(line: line)
            }
        }
    }

    /// One more byte of the record, refused past the limit before it is stored.
    private mutating func count() throws(CSVError) {
        recordBytes += 1
        guard recordBytes <= maximumRecordBytes else { throw .recordTooLong(line: recordLine, limit: maximumRecordBytes) }
    }

    private mutating func append(_ byte: UInt8) throws(CSVError) {
        try count()
        field.append(byte)
    }

    private mutating func endField() throws(CSVError) {
        // Before anything compares or hashes the field as a String (`StreamSafeText`).
        guard StreamSafeText.isStreamSafe(utf8: field) else { throw .notStreamSafe(line: recordLine) }
        fields.append(String(decoding: field, as: UTF8.self))
        field.removeAll(keepingCapacity: true)
        state = .fieldStart
    }

    /// Ends the field and the record at a line break (or at the end of the stream).
    private mutating func endRecord(into records: inout [CSVRecord]) throws(CSVError) {
        try endField()
        records.append(CSVRecord(line: recordLine, fields: fields))
        fields = []
        recordBytes = 0
        line += 1
        recordLine = line
    }
}

/// One CSV record: its fields, and the line of the file where it starts (a quoted line break makes a record span
/// lines). An empty line is a record of one empty field.
public struct CSVRecord: Sendable, Hashable {
    public var line: Int
    public var fields: [String]

    public init(line: Int, fields: [String]) {
        self.line = line
        self.fields = fields
    }

    /// An empty (or all-blank) line, which readers of data files usually skip.
    public var isBlank: Bool {
        fields.count == 1 && fields.allSatisfy { $0.allSatisfy { $0 == " " || $0 == "\t" } }
    }
}

/// Why a CSV stream cannot be read on; each names the line (1-based) where the trouble starts.
public enum CSVError: Error, Sendable, Hashable, CustomStringConvertible {
    case recordTooLong(line: Int, limit: Int)
    case unterminatedQuote(line: Int)
    case textAfterClosingQuote(line: Int)
    /// A field with more combining marks in a row than `StreamSafeText` allows.
    case notStreamSafe(line: Int)

    public var line: Int {
        switch self {
        case .recordTooLong(let line, _), .unterminatedQuote(let line), .textAfterClosingQuote(let line),
             .notStreamSafe(let line): line
        }
    }

    public var description: String {
        switch self {
        case .recordTooLong(let line, let limit):
            "line \(line): the record is longer than \(limit) bytes, the limit (is a quote left open?)"
        case .unterminatedQuote(let line):
            "line \(line): a quoted field is never closed (the file ends inside quotes)"
        case .textAfterClosingQuote(let line):
            "line \(line): a closing quote must be followed by a comma or a line break (write a quote inside quotes as \"\")"
        case .notStreamSafe(let line):
            "line \(line): a field \(StreamSafeText.rule)"
        }
    }
}
