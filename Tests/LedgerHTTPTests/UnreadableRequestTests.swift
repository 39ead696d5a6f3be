import Foundation
import Hummingbird
import HummingbirdTesting
import LedgerCore
import LedgerHTTP
import LedgerTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Bytes the HTTP parser refuses never reach the router; they must still get the API's JSON error, not a bare 400.
/// Sent over a real socket to a live server, because only the live pipeline parses bytes.
@Suite("HTTP: requests the parser cannot read")
struct UnreadableRequestTests {
    static let unreadable: [(String, String)] = [
        ("a control byte in a header value", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Trace: a\u{01}b\r\n\r\n"),
        ("a NUL in a header value", "GET /healthz HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a\u{00}b\r\n\r\n"),
        ("a space in a header name", "GET /healthz HTTP/1.1\r\nHost: x\r\nBad Name: v\r\n\r\n"),
        ("a broken request line", "GET\u{7F} /healthz HTTP/1.1\r\nHost: x\r\n\r\n"),
        ("not HTTP at all", "\u{16}\u{03}\u{01}\u{02}\u{00}\u{01}\u{00}\u{01}\u{fc}\u{03}\u{03}\r\n\r\n"),
    ]

    @Test(arguments: unreadable.map(\.0))
    func anUnreadableRequestGetsTheJSONError(_ name: String) async throws {
        let bytes = try #require(Self.unreadable.first { $0.0 == name }?.1)
        try await withLiveServer { port in
            let answer = try await blocking { try RawHTTP.exchange(port: port, Array(bytes.utf8)) }
            #expect(answer.statusLine == "HTTP/1.1 400 Bad Request", "\(name): \(answer.text)")
            #expect(answer.header("content-type") == "application/json", "\(name)")
            let json = try JSONValue(parsing: Array(answer.body.utf8))
            #expect(json["error"]?["code"] == "invalid_request", "\(name)")
            #expect(json["error"]?["details"]?["field"] == "request", "\(name)")
        }
    }

    /// The responder steps aside for readable requests: two on one connection are both answered by the router.
    @Test func readableRequestsOnOneConnectionAreAnsweredAsUsual() async throws {
        try await withLiveServer { port in
            let twice = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /nowhere HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            let answer = try await blocking { try RawHTTP.exchange(port: port, Array(twice.utf8)) }
            #expect(answer.statusLine == "HTTP/1.1 200 OK", "\(answer.text)")
            #expect(answer.text.contains("HTTP/1.1 404 Not Found"), "\(answer.text)")
            #expect(answer.text.contains("\"not_found\""), "\(answer.text)")
        }
    }

    /// Only the operational routes are needed: the parser refuses these bytes before any route or token is looked at.
    private func withLiveServer(_ body: @Sendable @escaping (Int) async throws -> Void) async throws {
        try await API.run { api in
            let app = Application(
                router: LedgerApplication.router(database: api.database), server: LedgerApplication.server(),
                logger: API.logger)
            try await app.test(.live) { client in
                try await body(try #require(client.port))
            }
        }
    }
}

/// One exchange over a plain TCP socket: writes the bytes, reads until the server closes. The 60 s receive limit only
/// guards against a hang: every exchange here ends with the server closing, which a busy machine may delay by seconds.
enum RawHTTP {
    struct Answer {
        let text: String
        var statusLine: String { text.components(separatedBy: "\r\n")[0] }
        var body: String { text.components(separatedBy: "\r\n\r\n").dropFirst().joined(separator: "\r\n\r\n") }
        func header(_ name: String) -> String? {
            text.components(separatedBy: "\r\n\r\n").first?.components(separatedBy: "\r\n").dropFirst()
                .first { $0.lowercased().hasPrefix(name + ":") }
                .map { String($0.dropFirst(name.count + 1)).trimmingCharacters(in: .whitespaces) }
        }
    }

    struct SocketError: Error { let call: String; let code: Int32 }

    /// `halfClose`: the client shuts its side down once the bytes are sent, as some do after their last request.
    static func exchange(port: Int, _ bytes: [UInt8], halfClose: Bool = false) throws -> Answer {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw SocketError(call: "socket", code: errno) }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 60, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw SocketError(call: "connect", code: errno) }
        guard send(fd, bytes, bytes.count, 0) == bytes.count else { throw SocketError(call: "send", code: errno) }
        if halfClose { shutdown(fd, Int32(SHUT_WR)) }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count <= 0 { break }
            received += buffer[0..<count]
        }
        return Answer(text: String(decoding: received, as: UTF8.self))
    }
}
