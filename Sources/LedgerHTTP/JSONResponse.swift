import Foundation
import HTTPTypes
import Hummingbird
import LedgerCore

/// JSON in and out. Responses are `JSONValue` trees written as canonical JSON (sorted keys), so the same
/// answer is always the same bytes — an idempotent replay returns an identical body.
enum JSONResponse {
    /// Request bodies above this are refused with 413.
    static let maximumBodySize = 256 * 1024

    static func make(status: HTTPResponse.Status, body: JSONValue, headers: HTTPFields = [:]) -> Response {
        make(status: status, bytes: ByteBuffer(bytes: body.canonicalBytes), headers: headers)
    }

    /// An answer already rendered as canonical JSON.
    static func make(status: HTTPResponse.Status, bytes: ByteBuffer, headers: HTTPFields = [:]) -> Response {
        var fields = headers
        fields[.contentType] = "application/json"
        return Response(status: status, headers: fields, body: .init(byteBuffer: bytes))
    }

    /// Reads a JSON request body: the content type must be JSON, the size within the limit, the text valid JSON.
    static func readBody(_ request: Request) async throws -> JSONValue {
        guard let contentType = request.headers[.contentType], contentType.hasMediaType("application/json") else {
            throw APIError(.unsupportedMediaType, "unsupported_media_type", "the body must be application/json",
                           details: ["field": "Content-Type"])
        }
        // JSON is UTF-8 (RFC 8259 §8.1): a body declared in another charset would be read as what it is not.
        if let charset = contentType.charsetParameter, !charset.equalsIgnoringASCIICase("utf-8") {
            throw APIError(.unsupportedMediaType, "unsupported_media_type",
                           "the body must be UTF-8 JSON, not charset=\(charset)", details: ["field": "Content-Type"])
        }
        let buffer = try await RequestBodyReader.collect(request, upTo: maximumBodySize)
        do {
            return try JSONValue(parsingIncoming: buffer.readableBytesView)
        } catch let error as JSONSyntaxError {
            let (line, column) = Self.lineAndColumn(of: error.offset, in: buffer.readableBytesView)
            throw APIError.invalidRequest(field: "body", "the body is not valid JSON at line \(line), column \(column): \(error.reason)")
        } catch {
            throw APIError.invalidRequest(field: "body", "the body is not valid JSON")
        }
    }

    /// The line and column (both from 1, the column in bytes) of a byte offset, as an editor shows them.
    static func lineAndColumn(of offset: Int, in bytes: some Collection<UInt8>) -> (line: Int, column: Int) {
        var (line, column) = (1, 1)
        for byte in bytes.prefix(offset) {
            if byte == UInt8(ascii: "\n") { (line, column) = (line + 1, 1) } else { column += 1 }
        }
        return (line, column)
    }
}

/// Reading fields of a JSON object, naming the field when it is missing or mistyped.
struct JSONFields {
    let members: [String: JSONValue]
    let path: String

    init(_ value: JSONValue, path: String) throws {
        guard case .object(let members) = value else {
            throw APIError.invalidRequest(field: path.isEmpty ? "body" : path, "\(path.isEmpty ? "the body" : path) must be a JSON object")
        }
        self.members = members
        self.path = path
    }

    func name(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    /// Refuses members other than `allowed`.
    func onlyAllowing(_ allowed: Set<String>) throws {
        if let unknown = members.keys.sorted().first(where: { !allowed.contains($0) }) {
            throw APIError.invalidRequest(field: name(unknown), "\(name(unknown)) is not a field of this request")
        }
    }

    func value(_ key: String) -> JSONValue? {
        guard let value = members[key], value != .null else { return nil }
        return value
    }

    func string(_ key: String) throws -> String? {
        guard let value = value(key) else { return nil }
        guard case .string(let text) = value else { throw APIError.invalidRequest(field: name(key), "\(name(key)) must be a string") }
        return text
    }

    func uuid(_ key: String) throws -> UUID? {
        guard let text = try string(key) else { return nil }
        guard let uuid = UUID(text: text) else { throw APIError.invalidRequest(field: name(key), "\(name(key)) must be a UUID") }
        return uuid
    }

    func time(_ key: String) throws -> Date? {
        guard let text = try string(key) else { return nil }
        guard let date = RFC3339.parse(text) else {
            throw APIError.invalidRequest(field: name(key), "\(name(key)) must be an RFC 3339 time, e.g. 2026-11-22T13:05:09Z")
        }
        return date
    }

    func integer(_ key: String, in range: ClosedRange<Int64>) throws -> Int64? {
        guard let value = value(key) else { return nil }
        guard case .int(let number) = value, range.contains(number) else {
            throw APIError.invalidRequest(field: name(key), "\(name(key)) must be an integer from \(range.lowerBound) to \(range.upperBound)")
        }
        return number
    }

    func required<T>(_ key: String, _ read: (String) throws -> T?) throws -> T {
        guard let value = try read(key) else { throw APIError.invalidRequest(field: name(key), "\(name(key)) is required") }
        return value
    }
}
