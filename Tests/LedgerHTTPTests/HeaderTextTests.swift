import HTTPTypes
@testable import LedgerHTTP
import NIOHTTP1
import NIOHTTPTypesHTTP1
import Testing

/// Header values are compared as HTTP says: media types and the auth scheme in any letter case, a media type whatever
/// its parameters, optional whitespace aside.
@Suite("HTTP: header values")
struct HeaderTextTests {
    @Test(arguments: [
        ("application/json", true), ("Application/JSON", true), (" application/json ; charset=utf-8", true),
        ("application/json;charset=UTF-8", true), ("\tAPPLICATION/json\t", true),
        ("application/jsonx", false), ("application/json-seq", false), ("text/json", false), ("application/jso", false),
        ("", false), ("application /json", false),
    ])
    func aMediaTypeIsMatchedInAnyCaseWithoutItsParameters(value: String, matches: Bool) {
        #expect(value.hasMediaType("application/json") == matches)
    }

    @Test func theBearerSchemeIsMatchedInAnyCase() {
        #expect("Bearer ".equalsIgnoringASCIICase("bearer "))
        #expect("BEARER ".equalsIgnoringASCIICase("bearer "))
        #expect(!"Bearer\t".equalsIgnoringASCIICase("bearer "))
        #expect(!"Basic  ".equalsIgnoringASCIICase("bearer "))
        // Only ASCII letters fold: "[" is "{" with bit 0x20 cleared, and must not match it.
        #expect(!"[".equalsIgnoringASCIICase("{"))
    }

    /// A field's value is what `HTTPFields` gives (`value(of:)`, read without its join): a field given twice is both
    /// values joined, so two `Authorization` headers are never read as the first one's token.
    @Test func aFieldGivenTwiceIsReadAsBothValuesJoined() throws {
        var fields: HTTPFields = [.authorization: "Bearer first", .accept: "*/*"]
        #expect(fields.value(of: .authorization) == "Bearer first" && fields.value(of: .ifNoneMatch) == nil)
        fields.append(HTTPField(name: .authorization, value: "Bearer second"))
        #expect(fields.value(of: .authorization) == "Bearer first, Bearer second")
        #expect(fields.value(of: .authorization) == fields[.authorization])
        #expect(try RequireScope.bearerSecret(of: fields) == "first, Bearer second")
        #expect(try RequireScope.bearerSecret(of: [.authorization: "bearer \tsecret-1 "]) == "secret-1")
        #expect(throws: APIError.self) { try RequireScope.bearerSecret(of: [.authorization: "Bearer "]) }
        #expect(throws: APIError.self) { try RequireScope.bearerSecret(of: [.authorization: "Bearér secret"]) }
    }

    /// The headers as NIO's parser gives them (the history lane reads those) are read as `HTTPFields` reads them: the
    /// name in any case, a field given twice as both values joined.
    @Test func theParsersHeadersAreReadAsHTTPFieldsReadsThem() {
        var headers = HTTPHeaders([("authorization", "Bearer first"), ("Accept", "*/*")])
        var fields = HTTPFields(headers, splitCookie: false)
        #expect(headers.value(of: .authorization) == "Bearer first" && headers.value(of: .ifNoneMatch) == nil)
        headers.add(name: "AUTHORIZATION", value: "Bearer second")
        fields = HTTPFields(headers, splitCookie: false)
        #expect(headers.value(of: .authorization) == "Bearer first, Bearer second")
        #expect(headers.value(of: .authorization) == fields.value(of: .authorization))
    }
}
