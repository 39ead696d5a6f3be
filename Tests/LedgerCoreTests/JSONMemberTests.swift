import Foundation
import LedgerCore
import Testing

/// The top-level members of an object with the exact text of each value: what a signature over one member needs.
@Suite("JSON members and the text of their values")
struct JSONMemberTests {
    func members(_ text: String) throws -> [JSONMember]? { try JSONValue.members(parsingObject: Array(text.utf8)) }

    func text(_ member: JSONMember, of text: String) -> String {
        String(decoding: Array(text.utf8)[member.bytes], as: UTF8.self)
    }

    @Test func eachValuesTextIsExactlyItsBytesWhateverSurroundsIt() throws {
        let text = #" { "a" : { "b" : "}\"{" , "c": [1, {"a": 2}] } , "s":"x\u0022y" ,"n":-1.5e3, "z": null } "#
        let found = try #require(try members(text))
        #expect(found.map(\.name) == ["a", "s", "n", "z"])
        #expect(found.map { self.text($0, of: text) } == [#"{ "b" : "}\"{" , "c": [1, {"a": 2}] }"#, #""x\u0022y""#, "-1.5e3", "null"])
        try #require(found.count == 4)
        #expect(found[0].value == ["b": "}\"{", "c": [1, ["a": 2]]])
        #expect(found[1].value == "x\"y")
    }

    /// Only the top level: a nested member of the same name is part of its parent's value, never a member here.
    @Test func aNestedMemberIsNotATopLevelOne() throws {
        let found = try #require(try members(#"{"outer": {"key": 1}, "key": 2}"#))
        #expect(found.map(\.name) == ["outer", "key"])
        try #require(found.count == 2)
        #expect(found[1].value == 2)
    }

    /// A repeated top-level name is listed twice, for the caller to refuse; nested ones are refused as by the parser.
    @Test func aRepeatedTopLevelNameIsListedTwiceAndANestedOneRefused() throws {
        let found = try #require(try members(#"{"k": 1, "\u006b": 2}"#))
        #expect(found.map(\.name) == ["k", "k"])
        #expect(throws: JSONSyntaxError.self) { try members(#"{"o": {"k": 1, "k": 2}}"#) }
    }

    @Test func anythingButOneJSONValueIsRefusedAndAnotherValueIsNotAnObject() throws {
        for text in ["", "{", #"{"a": 1,}"#, #"{"a": 1} {}"#, #"{"a" 1}"#, #"{a: 1}"#] {
            #expect(throws: JSONSyntaxError.self, "\(text)") { try members(text) }
        }
        #expect(try members("[1]") == nil)
        #expect(try members(" {} ") == [])
    }
}
