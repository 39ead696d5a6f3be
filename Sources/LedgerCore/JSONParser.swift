/// Why a text is not JSON, and where (a byte offset).
public struct JSONSyntaxError: Error, Sendable, Hashable, CustomStringConvertible {
    public var offset: Int
    public var reason: String

    public init(offset: Int, reason: String) {
        self.offset = offset
        self.reason = reason
    }

    public var description: String { "invalid JSON at byte \(offset): \(reason)" }
}

/// A strict RFC 8259 parser, so what the ledger accepts is exactly JSON: no trailing commas, no duplicate keys
/// (whose meaning parsers disagree on), UTF-8 only, nesting at most 512 deep. Integers without a fraction or
/// exponent that fit in an `Int64` stay `.int`; every other number is a finite `.double` that writes back as the
/// same number: what a client sent is stored exactly or refused, never rewritten (123456789012345678901234567890
/// became 1.2345678901234568e+29, and 1e-400 became 0.0).
struct JSONParser {
    static let maximumDepth = 512

    private let bytes: [UInt8]
    /// Refuses strings that are not stream-safe (`StreamSafeText`): on for what comes in, off for what the ledger
    /// stored, which must read back as it was written.
    private let streamSafe: Bool
    private var index = 0
    /// The members of the objects being parsed, innermost last (see `object`).
    private var pending: [(String, JSONValue)] = []

    static func parse(_ bytes: [UInt8], streamSafe: Bool = false) throws(JSONSyntaxError) -> JSONValue {
        var parser = JSONParser(bytes: bytes, streamSafe: streamSafe)
        let value = try parser.value(depth: 0)
        parser.skipWhitespace()
        guard parser.index == bytes.count else { throw parser.error("unexpected text after the value") }
        return value
    }

    private init(bytes: [UInt8], streamSafe: Bool) {
        self.bytes = bytes
        self.streamSafe = streamSafe
        pending.reserveCapacity(16)  // an event's data and the objects in it, in one allocation
    }

    private func error(_ reason: String) -> JSONSyntaxError {
        JSONSyntaxError(offset: index, reason: reason)
    }

    private var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func skipWhitespace() {
        while let byte = current, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { index += 1 }
    }

    private mutating func expect(_ byte: UInt8, _ what: String) throws(JSONSyntaxError) {
        skipWhitespace()
        guard current == byte else { throw error("expected \(what)") }
        index += 1
    }

    private mutating func value(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        guard depth < Self.maximumDepth else { throw error("nested deeper than \(Self.maximumDepth)") }
        skipWhitespace()
        guard let byte = current else { throw error("unexpected end of text") }
        switch byte {
        case UInt8(ascii: "{"): return try object(depth: depth)
        case UInt8(ascii: "["): return try array(depth: depth)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw error("unexpected character")
        }
    }

    private mutating func literal(_ word: String) throws(JSONSyntaxError) {
        for byte in word.utf8 {
            guard current == byte else { throw error("expected \(word)") }
            index += 1
        }
    }

    /// The members of the one object `bytes` holds, in their order, without hashing them into a dictionary (nil when
    /// the value is not an object): for a stored event's data, one small object read member by member (`DataFields`),
    /// by the million in a rebuild.
    static func parseMembers(_ bytes: [UInt8]) throws(JSONSyntaxError) -> [(String, JSONValue)]? {
        var parser = JSONParser(bytes: bytes, streamSafe: false)
        parser.skipWhitespace()
        guard parser.current == UInt8(ascii: "{") else {
            _ = try parse(bytes)
            return nil
        }
        try parser.members(depth: 0)
        parser.skipWhitespace()
        guard parser.index == bytes.count else { throw parser.error("unexpected text after the value") }
        return parser.pending
    }

    /// The members of the object `bytes` holds, each with the exact byte range of its value, in their order and with
    /// a repeated name kept (nil when the value is not an object). For a signature over one member's text: the caller
    /// finds the member it believes here, hashes exactly its bytes and reads exactly its value, and decides what a
    /// repeated name means. Everything else is as strict as `parse` (nested objects still refuse repeated names).
    static func parseMemberSpans(_ bytes: [UInt8]) throws(JSONSyntaxError) -> [JSONMember]? {
        var parser = JSONParser(bytes: bytes, streamSafe: false)
        parser.skipWhitespace()
        guard parser.current == UInt8(ascii: "{") else {
            _ = try parse(bytes)
            return nil
        }
        parser.index += 1  // {
        var found: [JSONMember] = []
        parser.skipWhitespace()
        if parser.current == UInt8(ascii: "}") {
            parser.index += 1
        } else {
            members: while true {
                parser.skipWhitespace()
                guard parser.current == UInt8(ascii: "\"") else { throw parser.error("expected a member name") }
                let name = try parser.string()
                try parser.expect(UInt8(ascii: ":"), "':'")
                parser.skipWhitespace()
                let start = parser.index
                let value = try parser.value(depth: 1)
                found.append(JSONMember(name: name, value: value, bytes: start..<parser.index))
                parser.skipWhitespace()
                switch parser.current {
                case UInt8(ascii: ","): parser.index += 1
                case UInt8(ascii: "}"):
                    parser.index += 1
                    break members
                default: throw parser.error("expected ',' or '}'")
                }
            }
        }
        parser.skipWhitespace()
        guard parser.index == bytes.count else { throw parser.error("unexpected text after the value") }
        return found
    }

    private mutating func object(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        // Members are gathered on `pending`, one list the whole parse shares (a nested object's members go on top of
        // its parent's and are taken off when it ends), and hashed into the dictionary once, at its final size:
        // inserting as they came grew the dictionary several times per object, hashing every key again each time, and
        // a list of its own per object grew and was freed with it (a rebuild parses every stored event).
        let first = pending.count
        defer { pending.removeLast(pending.count - first) }
        try members(depth: depth)
        var members = [String: JSONValue](minimumCapacity: pending.count - first)
        for (name, value) in pending[first...] { members[name] = value }
        return .object(members)
    }

    /// Reads an object's members, from its `{` to its `}`, onto the end of `pending`.
    private mutating func members(depth: Int) throws(JSONSyntaxError) {
        index += 1  // {
        let first = pending.count
        var repeated = RepeatedNames()
        skipWhitespace()
        if current == UInt8(ascii: "}") {
            index += 1
            return
        }
        while true {
            skipWhitespace()
            guard current == UInt8(ascii: "\"") else { throw error("expected a member name") }
            let keyOffset = index
            let key = try string()
            if let seen = repeated.earlier(key, among: pending[first...]) {
                // Swift compares strings by canonical equivalence: "é" composed and decomposed are one key here.
                let why = Array(seen.utf8) == Array(key.utf8) ? "" : " (the two differ only in Unicode normalization)"
                throw JSONSyntaxError(offset: keyOffset, reason: "duplicate member name \"\(key)\"\(why)")
            }
            try expect(UInt8(ascii: ":"), "':'")
            let value = try value(depth: depth + 1)
            pending.append((key, value))
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"):
                index += 1
                return
            default: throw error("expected ',' or '}'")
            }
        }
    }

    /// Finds a member name given twice: by a scan of the names so far while the object is small (every event's), by
    /// a set once it is not. Scanned throughout, one posted body of 23,000 names (242 KB, within the 256 KiB limit)
    /// took 0.85 s of the service's CPU to be refused; with the set, 7 ms.
    private struct RepeatedNames {
        static let scanned = 16
        private var set: Set<String> = []

        /// The earlier name equal to `name` (canonically), or nil. `members` are the object's members before `name`.
        mutating func earlier(_ name: String, among members: ArraySlice<(String, JSONValue)>) -> String? {
            if members.count < Self.scanned { return members.first(where: { $0.0 == name })?.0 }
            if set.isEmpty { set = Set(members.map(\.0)) }
            let (inserted, earlier) = set.insert(name)
            return inserted ? nil : earlier
        }
    }

    private mutating func array(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        index += 1  // [
        var elements: [JSONValue] = []
        skipWhitespace()
        if current == UInt8(ascii: "]") {
            index += 1
            return .array(elements)
        }
        while true {
            elements.append(try value(depth: depth + 1))
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"): index += 1; return .array(elements)
            default: throw error("expected ',' or ']'")
            }
        }
    }

    private mutating func number() throws(JSONSyntaxError) -> JSONValue {
        let start = index
        func digits(_ parser: inout JSONParser) -> Int {
            let from = parser.index
            while let byte = parser.current, (0x30...0x39).contains(byte) { parser.index += 1 }
            return parser.index - from
        }
        if current == UInt8(ascii: "-") { index += 1 }
        if current == UInt8(ascii: "0") {
            index += 1
        } else if digits(&self) == 0 {
            throw error("expected a digit")
        }
        var isInteger = true
        if current == UInt8(ascii: ".") {
            index += 1
            isInteger = false
            guard digits(&self) > 0 else { throw error("expected a digit after '.'") }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            index += 1
            isInteger = false
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
            guard digits(&self) > 0 else { throw error("expected a digit in the exponent") }
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        if isInteger, let integer = Int64(text) { return .int(integer) }
        guard let double = Double(text), double.isFinite, Self.decimal(text) == Self.decimal("\(double)") else {
            throw JSONSyntaxError(
                offset: start,
                reason: "the number \(text.prefix(40)) cannot be kept exactly (an integer must fit in 64 bits, "
                    + "a fraction in a 64-bit float as written)")
        }
        return .double(double)
    }

    /// The value a number's text writes, as its significant digits and the power of ten of the last one:
    /// "12.50e1" and "125" are both ("125", 0); zero is ("", 0).
    static func decimal(_ text: String) -> (digits: [UInt8], exponent: Int) {
        var digits: [UInt8] = []
        var exponent = 0
        var afterPoint = false
        var bytes = Substring(text).utf8[...]
        if bytes.first == UInt8(ascii: "-") { bytes = bytes.dropFirst() }
        while let byte = bytes.first, byte != UInt8(ascii: "e"), byte != UInt8(ascii: "E") {
            bytes = bytes.dropFirst()
            if byte == UInt8(ascii: ".") {
                afterPoint = true
                continue
            }
            if digits.isEmpty, byte == UInt8(ascii: "0") {
                if afterPoint { exponent -= 1 }
                continue
            }
            digits.append(byte)
            if afterPoint { exponent -= 1 }
        }
        if !bytes.isEmpty { exponent += Int(String(decoding: bytes.dropFirst(), as: UTF8.self)) ?? 0 }
        while digits.last == UInt8(ascii: "0") {
            digits.removeLast()
            exponent += 1
        }
        return digits.isEmpty ? ([], 0) : (digits, exponent)
    }

    private mutating func string() throws(JSONSyntaxError) -> String {
        index += 1  // opening quote
        let start = index
        // Find the closing quote; the bytes between are UTF-8 with JSON escapes.
        var escaped = false, ascii = true
        while true {
            guard let byte = current else { throw error("unterminated string") }
            if byte == UInt8(ascii: "\"") { break }
            guard byte >= 0x20 else { throw error("control character in string") }
            if byte >= 0x80 { ascii = false }
            if byte == UInt8(ascii: "\\") {
                escaped = true
                index += 2
            } else {
                index += 1
            }
        }
        let end = index
        index += 1  // closing quote

        // Most strings have no escape: their bytes are the text, once validated as UTF-8 (the stored events' and the
        // requests' strings: this is most of the time a history read or a rebuild spends parsing). ASCII is valid
        // UTF-8 as it is, and `String(decoding:)` takes it without `String(validating:)`'s unspecialised generic
        // check (10 % of a rebuild's CPU).
        if !escaped && ascii {
            return String(decoding: bytes[start..<end], as: UTF8.self)
        }
        if !escaped {
            guard let text = String(validating: bytes[start..<end], as: UTF8.self) else {
                throw JSONSyntaxError(offset: start, reason: "string is not valid UTF-8")
            }
            return try streamSafe(text, at: start)
        }

        var scalars: [Unicode.Scalar] = []
        var iterator = bytes[start..<end].makeIterator()
        var utf8 = UTF8()
        while true {
            switch utf8.decode(&iterator) {
            case .scalarValue(let scalar): scalars.append(scalar)
            case .emptyInput: return try streamSafe(unescape(scalars, at: start), at: start)
            case .error: throw JSONSyntaxError(offset: start, reason: "string is not valid UTF-8")
            }
        }
    }

    private func streamSafe(_ text: String, at offset: Int) throws(JSONSyntaxError) -> String {
        guard !streamSafe || StreamSafeText.isStreamSafe(text.unicodeScalars) else {
            throw JSONSyntaxError(offset: offset, reason: "a string \(StreamSafeText.rule)")
        }
        return text
    }

    private func unescape(_ scalars: [Unicode.Scalar], at offset: Int) throws(JSONSyntaxError) -> String {
        func failure(_ reason: String) -> JSONSyntaxError { JSONSyntaxError(offset: offset, reason: reason) }
        func hex4(_ position: Int) throws(JSONSyntaxError) -> UInt32 {
            guard position + 4 <= scalars.count else { throw failure("short \\u escape") }
            var value: UInt32 = 0
            for scalar in scalars[position..<position + 4] {
                guard scalar.isASCII, let digit = Character(scalar).hexDigitValue else { throw failure("bad \\u escape") }
                value = value * 16 + UInt32(digit)
            }
            return value
        }
        var text = String.UnicodeScalarView()
        var position = 0
        while position < scalars.count {
            let scalar = scalars[position]
            position += 1
            guard scalar == "\\" else {
                text.append(scalar)
                continue
            }
            guard position < scalars.count else { throw failure("unterminated escape") }
            let escape = scalars[position]
            position += 1
            switch escape {
            case "\"": text.append("\"")
            case "\\": text.append("\\")
            case "/": text.append("/")
            case "b": text.append("\u{08}")
            case "f": text.append("\u{0C}")
            case "n": text.append("\n")
            case "r": text.append("\r")
            case "t": text.append("\t")
            case "u":
                var code = try hex4(position)
                position += 4
                if (0xD800...0xDBFF).contains(code) {
                    guard position + 1 < scalars.count, scalars[position] == "\\", scalars[position + 1] == "u" else {
                        throw failure("unpaired surrogate")
                    }
                    let low = try hex4(position + 2)
                    guard (0xDC00...0xDFFF).contains(low) else { throw failure("unpaired surrogate") }
                    position += 6
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                }
                guard let decoded = Unicode.Scalar(code) else { throw failure("unpaired surrogate") }
                text.append(decoded)
            default:
                throw failure("unknown escape \\\(escape)")
            }
        }
        return String(text)
    }
}
