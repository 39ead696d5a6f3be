import LedgerCore
import Testing

/// The project's one CSV codec against RFC 4180, chunk by chunk as a stream arrives.
@Suite("CSV: the RFC 4180 reader and writer")
struct CSVTests {
    func read(_ text: String, limit: Int = CSVReader.defaultMaximumRecordBytes) throws -> [[String]] {
        try CSVReader.records(in: Array(text.utf8), maximumRecordBytes: limit).map(\.fields)
    }

    /// Every record of `bytes` fed in the given chunks.
    func read(chunks: [[UInt8]], limit: Int = CSVReader.defaultMaximumRecordBytes) throws(CSVError) -> [CSVRecord] {
        var reader = CSVReader(maximumRecordBytes: limit)
        var records: [CSVRecord] = []
        for chunk in chunks { records += try reader.feed(chunk) }
        if let last = try reader.finish() { records.append(last) }
        return records
    }

    /// A field no one could compare in linear time (`StreamSafeText`) refuses the stream at its line.
    @Test func aFieldWithMoreThanThirtyCombiningMarksInARowIsRefusedNamingItsLine() throws {
        let run = { (marks: Int) in "e" + String(repeating: "\u{0301}", count: marks) }
        #expect(try read("a,\(run(30))\n") == [["a", run(30)]])
        #expect(throws: CSVError.notStreamSafe(line: 2)) { try read("a\nb,\(run(31))\n") }
    }

    @Test func aQuotedFieldHoldsCommasDoubledQuotesAndLineBreaks() throws {
        #expect(try read("a,\"b,c\",\"say \"\"hi\"\"\",\"x\ny\",\"\"\n") == [["a", "b,c", "say \"hi\"", "x\ny", ""]])
        #expect(try read("\"x\r\ny\",z\r\n") == [["x\r\ny", "z"]], "a CR LF inside quotes is data")
    }

    @Test func crLfLfAndALoneCrEachEndARecord() throws {
        #expect(try read("a,b\r\nc,d\ne,f\rg,h") == [["a", "b"], ["c", "d"], ["e", "f"], ["g", "h"]])
        #expect(try read("a\r\n\r\nb\r\n") == [["a"], [""], ["b"]], "an empty line is one empty field; no record after the last line end")
        #expect(try read("a,\n,\n") == [["a", ""], ["", ""]], "a trailing comma is a trailing empty field")
    }

    @Test func aRecordNamesTheLineItStartsOnCountingQuotedLineBreaks() throws {
        let records = try CSVReader.records(in: Array("h\n\"x\ny\r\nz\",1\nw\r\nv".utf8))
        #expect(records.map(\.line) == [1, 2, 5, 6])
        #expect(records.map(\.fields) == [["h"], ["x\ny\r\nz", "1"], ["w"], ["v"]])
    }

    @Test func aByteOrderMarkAtTheStartIsSkippedAndKeptElsewhere() throws {
        #expect(try read("\u{FEFF}transaction_id,b\n1,2\n") == [["transaction_id", "b"], ["1", "2"]])
        #expect(try read("a,\u{FEFF}b\n\u{FEFF}c\n") == [["a", "\u{FEFF}b"], ["\u{FEFF}c"]], "only the stream's first bytes are a mark")
        #expect(try read("\u{FEFF}") == [], "a mark alone is an empty file")
        let half = try CSVReader.records(in: [0xEF, 0xBB, UInt8(ascii: "A")])
        #expect(half.count == 1 && half.first?.fields.first?.hasSuffix("A") == true && half.first?.fields.first != "A",
                "half a mark is data, not lost")
    }

    @Test func aRecordOverTheLimitIsRefusedNamingTheLineItStartsOn() throws {
        #expect(try read("ok\n" + String(repeating: "x", count: 16) + "\n", limit: 16).count == 2, "exactly the limit is fine")
        #expect(throws: CSVError.recordTooLong(line: 2, limit: 16)) {
            try read("ok\n" + String(repeating: "x", count: 17) + "\n", limit: 16)
        }
        // The usual cause: a quote left open swallows the rest of the file, line breaks and all.
        #expect(throws: CSVError.recordTooLong(line: 3, limit: 64 * 1024)) {
            try read("h\n1\n\"open," + String(repeating: "abc,def\n", count: 9000))
        }
        let error = CSVError.recordTooLong(line: 3, limit: 65536)
        #expect(error.description.hasPrefix("line 3: ") && error.description.contains("65536 bytes"))
    }

    @Test func theLimitHoldsWhateverTheChunksSoMemoryStaysBounded() throws {
        // A 1 MiB line without a break, fed in 4 KiB chunks: refused within the first 64 KiB + one chunk.
        let chunk = [UInt8](repeating: UInt8(ascii: "x"), count: 4096)
        var reader = CSVReader()
        var fed = 0
        var refused: CSVError?
        for _ in 0..<256 {
            do {
                _ = try reader.feed(chunk)
                fed += chunk.count
            } catch {
                refused = error
                break
            }
        }
        #expect(refused == .recordTooLong(line: 1, limit: CSVReader.defaultMaximumRecordBytes))
        #expect(fed <= CSVReader.defaultMaximumRecordBytes)
    }

    @Test func anUnterminatedQuoteAtTheEndIsAnErrorNamingTheLineItOpensOn() throws {
        #expect(throws: CSVError.unterminatedQuote(line: 3)) { try read("h\n1,2\n3,\"open\nmore\n") }
        #expect(throws: CSVError.unterminatedQuote(line: 1)) { try read("\"") }
        #expect(throws: CSVError.unterminatedQuote(line: 2)) { try read("a\n\"x\"\"") }
        #expect(CSVError.unterminatedQuote(line: 3).description.hasPrefix("line 3: "))
    }

    @Test func textAfterAClosingQuoteIsAnErrorNamingTheLine() throws {
        #expect(throws: CSVError.textAfterClosingQuote(line: 2)) { try read("a\n\"b\"c,d\n") }
    }

    @Test func aQuoteInsideAnUnquotedFieldIsKeptAsACharacter() throws {
        #expect(try read("5\" screen,a\"b\n") == [["5\" screen", "a\"b"]])
    }

    /// The same text cut at every byte — inside a quote pair, between CR and LF, inside a multi-byte character and
    /// inside the byte-order mark — and byte by byte reads the same records as whole.
    @Test func chunkBoundariesAnywhereReadTheSameRecords() throws {
        let text = "\u{FEFF}id,name,note\r\n1,\"Zoë, \"\"the\"\" 🙂\",\"two\r\nlines\"\r\n2,漢字,\"\"\n3,é,x\r"
        let bytes = Array(text.utf8)
        let whole = try read(chunks: [bytes])
        #expect(whole.map(\.fields) == [
            ["id", "name", "note"], ["1", "Zoë, \"the\" 🙂", "two\r\nlines"], ["2", "漢字", ""], ["3", "é", "x"],
        ])
        #expect(whole.map(\.line) == [1, 2, 4, 5])
        for cut in 0...bytes.count {
            #expect(try read(chunks: [Array(bytes[..<cut]), Array(bytes[cut...])]) == whole, "cut at byte \(cut)")
        }
        #expect(try read(chunks: bytes.map { [$0] }) == whole, "byte by byte")
        #expect(try read(chunks: []) == [], "no bytes, no records")
    }

    @Test func theWriterQuotesOnlyWhenItMust() {
        #expect(CSVWriter.record(["1", "a b", "x.y:z-_", "", "é"]) == "1,a b,x.y:z-_,,é")
        #expect(CSVWriter.record(["a,b", "say \"hi\"", "x\ny", "x\ry", "\u{FEFF}m"])
            == "\"a,b\",\"say \"\"hi\"\"\",\"x\ny\",\"x\ry\",\"\u{FEFF}m\"")
        // Decided: values are written exactly, formula-like ones too (see CSVWriter).
        #expect(CSVWriter.record(["=1+2", "-3", "@x"]) == "=1+2,-3,@x")
    }

    /// Whatever the writer writes, the reader reads back field for field: random records over an alphabet of every
    /// character with a meaning in CSV, multi-byte characters and the byte-order mark, in random chunks.
    @Test(arguments: [1, 2, 3, 42, 2026] as [UInt64])
    func writtenRecordsReadBackTheSameInAnyChunks(seed: UInt64) throws {
        var random = SplitMix64(state: seed)
        let alphabet: [String] = [",", "\"", "\r", "\n", "\r\n", " ", "a", "Z", "0", "é", "漢", "🙂", "\u{FEFF}", "\t"]
        for _ in 0..<50 {
            let records: [[String]] = (0..<Int.random(in: 1...6, using: &random)).map { _ in
                (0..<Int.random(in: 1...5, using: &random)).map { _ in
                    (0..<Int.random(in: 0...6, using: &random)).map { _ in alphabet.randomElement(using: &random) ?? "" }.joined()
                }
            }
            let text = records.map(CSVWriter.record).map { $0 + "\n" }.joined()
            let bytes = Array(text.utf8)
            var chunks: [[UInt8]] = []
            var start = 0
            while start < bytes.count {
                let end = min(bytes.count, start + Int.random(in: 1...7, using: &random))
                chunks.append(Array(bytes[start..<end]))
                start = end
            }
            #expect(try read(chunks: chunks).map(\.fields) == records, "\(records)")
        }
    }
}
