import Foundation
import LedgerCore
import Testing

@Suite("JSONValue and its canonical text")
struct JSONValueTests {
    func parse(_ text: String) throws -> JSONValue { try JSONValue(parsing: Array(text.utf8)) }

    @Test func canonicalTextDoesNotDependOnKeyOrderOrWhitespace() throws {
        let one = try parse(#"{"b": 1, "a": {"y": [1, 2], "x": null}, "c": "z"}"#)
        let other = try parse(#"{"c":"z","a":{"x":null,"y":[1,2]},"b":1}"#)
        #expect(one == other)
        #expect(one.canonicalJSON == #"{"a":{"x":null,"y":[1,2]},"b":1,"c":"z"}"#)
        #expect(other.canonicalJSON == one.canonicalJSON)
    }

    @Test func keysAreSortedByTheirUTF8Bytes() {
        let value: JSONValue = ["é": 1, "z": 2, "B": 3, "a": 4, "aa": 5, "": 6, "😀": 7, "ﬀ": 8]
        #expect(value.canonicalJSON == #"{"":6,"B":3,"a":4,"aa":5,"z":2,"é":1,"ﬀ":8,"😀":7}"#)
    }

    @Test func onlyQuotesBackslashesAndControlCharactersAreEscaped() {
        let value: JSONValue = .string("quote\" back\\ slash/ nl\n cr\r tab\t bs\u{8} ff\u{C} nul\u{0} us\u{1F} del\u{7F} é 😀 \u{2028}")
        #expect(value.canonicalJSON
            == "\"quote\\\" back\\\\ slash/ nl\\n cr\\r tab\\t bs\\b ff\\f nul\\u0000 us\\u001f del\u{7F} é 😀 \u{2028}\"")
    }

    @Test func escapedTextParsesBackToTheSameString() throws {
        let original: JSONValue = ["k\"\\\n": .string("a\u{1}b\u{1F}c\"d\\e")]
        #expect(try parse(original.canonicalJSON) == original)
    }

    @Test func nestedValuesAreWrittenWithoutWhitespace() {
        let value: JSONValue = ["list": [1, -2, true, false, .null, 1.5, ["k": []], [:]], "text": "x"]
        #expect(value.canonicalJSON == #"{"list":[1,-2,true,false,null,1.5,{"k":[]},{}],"text":"x"}"#)
    }

    @Test func integersStayExactAndDistinctFromBooleans() throws {
        let value = try parse(#"[9007199254740993, -9223372036854775808, 9223372036854775807, 1, true, 0, false, 2.5]"#)
        #expect(value == [9_007_199_254_740_993, .int(.min), .int(.max), 1, true, 0, false, 2.5])
        #expect(value.canonicalJSON == "[9007199254740993,-9223372036854775808,9223372036854775807,1,true,0,false,2.5]")
    }

    @Test func numbersWrittenWithAnExponentAreDoubles() throws {
        #expect(try parse("9.223372036854776e18") == .double(9_223_372_036_854_775_808))
        #expect(try parse("1e30").canonicalJSON == "1e+30")
    }

    @Test func nonFiniteDoublesAreWrittenAsNull() {
        #expect(JSONValue.double(.infinity).canonicalJSON == "null")
        #expect(JSONValue.double(.nan).canonicalJSON == "null")
    }

    @Test(arguments: [
        "", " ", "{", "[1,]", "{\"a\":1,}", "{\"a\":}", "nul", "'x'", "{\"a\" 1}", "[1] x", "[1 2]", "[01]", "[.5]",
        "[1.]", "[+1]", "[-]", "[1e]", "[1e400]", "[\"a\tb\"]", "[\"\\ud800\"]", "[\"\\udc00\"]", "[\"\\x41\"]",
        "[\"\\u12\"]", "[\"unterminated]", "{\"a\":1,\"a\":2}", "{1:2}", "[True]", "[NaN]", "\u{FEFF}[]",
    ])
    func invalidJSONIsRefused(text: String) {
        #expect(throws: (any Error).self) { try JSONValue(parsing: Array(text.utf8)) }
    }

    @Test func escapesAreDecoded() throws {
        #expect(try parse(#"["\/\b\f\n\r\t\"\\", "\u00e9\u4E2D", "\ud83d\ude00"]"#) == ["/\u{8}\u{C}\n\r\t\"\\", "é中", "😀"])
    }

    @Test func numbersWithAFractionOrExponentStayDoubles() throws {
        #expect(try parse("[1.0, 1e2, -0.5, 0, -0]") == [.double(1), .double(100), -0.5, 0, 0])
        #expect(try parse("1.0").canonicalJSON == "1.0")
    }

    @Test func nestingIsLimited() throws {
        let deep = String(repeating: "[", count: 511) + String(repeating: "]", count: 511)
        #expect(throws: Never.self) { try JSONValue(parsing: Array(deep.utf8)) }
        let tooDeep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(throws: JSONSyntaxError.self) { try JSONValue(parsing: Array(tooDeep.utf8)) }
    }

    @Test func syntaxErrorsSayWhere() {
        #expect(throws: JSONSyntaxError(offset: 8, reason: "duplicate member name \"a\"")) {
            try JSONValue(parsing: Array(#"{"a":1, "a":2}"#.utf8))
        }
    }

    /// Nested objects gather their members on the same list as their parents': each keeps its own, and a name is
    /// only a duplicate within its own object.
    @Test func nestedObjectsKeepTheirOwnMembers() throws {
        let nested = #"{"a": {"a": 1, "b": {"a": 2, "c": [ {"a": 3} ]}}, "b": 4, "c": {}}"#
        #expect(try JSONValue(parsing: Array(nested.utf8)) == .object([
            "a": .object(["a": .int(1), "b": .object(["a": .int(2), "c": .array([.object(["a": .int(3)])])])]),
            "b": .int(4), "c": .object([:]),
        ]))
        #expect(throws: JSONSyntaxError(offset: 16, reason: "duplicate member name \"a\"")) {
            try JSONValue(parsing: Array(#"{"a": {"b": 1}, "a": 2}"#.utf8))
        }
    }

    @Test func aNameGivenTwiceIsFoundInALargeObjectToo() throws {
        // Past the first 16 names the parser looks them up in a set instead of scanning: both ways must find it.
        let members = (0..<100).map { "\"k\($0)\": \($0)" }
        let repeatedLate = "{" + (members + [#""k40": 0"#]).joined(separator: ", ") + "}"
        let offset = repeatedLate.utf8.count - #""k40": 0}"#.utf8.count
        #expect(throws: JSONSyntaxError(offset: offset, reason: "duplicate member name \"k40\"")) {
            try JSONValue(parsing: Array(repeatedLate.utf8))
        }
        let composed = "\u{E9}", decomposed = "e\u{301}"
        let normalized = "{" + (members + ["\"\(composed)\": 1", "\"\(decomposed)\": 2"]).joined(separator: ", ") + "}"
        #expect(throws: JSONSyntaxError.self) { try JSONValue(parsing: Array(normalized.utf8)) }
        #expect(try JSONValue(parsing: Array(("{" + members.joined(separator: ", ") + "}").utf8))["k99"] == 99)
    }

    @Test func invalidUTF8IsRefused() {
        #expect(throws: (any Error).self) { try JSONValue(parsing: [0x22, 0xFF, 0x22]) }
    }

    @Test func subscriptReadsObjectMembersOnly() {
        let value: JSONValue = ["a": ["b": 1]]
        #expect(value["a"]?["b"] == 1)
        #expect(value["missing"] == nil)
        #expect(JSONValue.array([1])["a"] == nil)
    }

    @Test func codableRoundTripKeepsTheValue() throws {
        let value: JSONValue = ["n": 42, "b": true, "d": 0.25, "s": "x", "l": [.null], "o": ["k": "v"]]
        let data = try JSONEncoder().encode(value)
        #expect(try JSONDecoder().decode(JSONValue.self, from: data) == value)
    }

    @Test func canonicalTextIsDeterministic() {
        var members: [String: JSONValue] = [:]
        for index in 0..<200 { members["key\(index)"] = .int(Int64(index)) }
        let first = JSONValue.object(members).canonicalJSON
        for _ in 0..<10 {
            #expect(JSONValue.object(Dictionary(uniqueKeysWithValues: members.shuffled().map { ($0.key, $0.value) })).canonicalJSON
                == first)
        }
    }
}

/// What a client sent is stored exactly or refused, never rewritten: 123456789012345678901234567890 was stored as
/// 1.2345678901234568e+29, 9223372036854775808 as 9.223372036854776e+18 and 1e-400 as 0.0.
@Suite("JSON numbers and member names: kept exactly or refused, saying why")
struct JSONExactnessTests {
    func parse(_ text: String) throws -> JSONValue { try JSONValue(parsing: Array(text.utf8)) }

    @Test(arguments: ["123456789012345678901234567890", "9223372036854775808", "-9223372036854775809", "1e-400",
                      "0.12345678901234567890", "1.00000000000000000001"])
    func aNumberThatCannotBeKeptExactlyIsRefused(number: String) {
        #expect(throws: JSONSyntaxError.self, "\(number)") { try parse("[\(number)]") }
    }

    @Test(arguments: ["0.1", "1.5", "-2.25e10", "1e-5", "0.00001", "12.50e1", "1E2", "-0.0", "5e-324", "9223372036854775807",
                      "1.7976931348623157e308"])
    func aNumberKeptExactlyParsesAndWritesBackAsTheSameNumber(number: String) throws {
        let value = try parse("[\(number)]")
        let written = try #require(value.elements.first).canonicalJSON
        #expect(try parse("[\(written)]") == value, "\(number) → \(written)")
    }

    @Test func namesThatDifferOnlyInNormalizationAreRefusedNamingThem() {
        let composed = "\u{E9}", decomposed = "e\u{301}"
        do {
            _ = try parse("{\"\(composed)\": 1, \"\(decomposed)\": 2}")
            Issue.record("two names equal under canonical equivalence were both accepted")
        } catch let error as JSONSyntaxError {
            #expect(error.reason.contains("Unicode normalization"), "\(error)")
        } catch {
            Issue.record("\(error)")
        }
        #expect(throws: JSONSyntaxError(offset: 9, reason: "duplicate member name \"a\"")) { try parse(#"{"a": 1, "a": 2}"#) }
    }
}
