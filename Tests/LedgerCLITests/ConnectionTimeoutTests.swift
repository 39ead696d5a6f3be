import Foundation
import LedgerCore
@testable import LedgerPostgres
import LedgerTestSupport
import Testing

/// Connections that never finish a request are closed (`serve --idle-timeout`): 1,000 idle connections, 300 sending a
/// header a byte a second, and 20 slow bodies were all held open for good, one file descriptor each. A body past the
/// limit is refused from its declared length, before any of it is read; one that comes in parts in time is served.
@Suite("CLI: serve closes connections that never finish a request")
struct ConnectionTimeoutTests {
    /// `serve` with `arguments` over a database of its own, and a token that may write.
    static func withServer(_ arguments: [String], _ body: @Sendable @escaping (RunningServer, String) async throws -> Void) async throws {
        try await TestDatabase.withURL { url, client in
            let token = try await TokenStore(client: client).create(name: "writer", scopes: [.eventsWrite])
            let server = try await RunningServer.start(databaseURL: url, arguments: arguments)
            defer { server.stop() }
            try await body(server, token)
        }
    }

    @Test func idleAndTricklingConnectionsAreClosedAndAnOversizedBodyIsRefusedUnread() async throws {
        // A database deadline past any wait here: the 408 and the 413 each need the token checked, and a busy machine
        // once took more than 1 s for that.
        try await Self.withServer(["--idle-timeout", "1", "--body-timeout", "2", "--database-deadline", "60"]) { server, token in
            let idle = try RawConnection(port: server.port)
            #expect(await blocking { idle.waitForClose(atMost: 20) }, "an idle connection is closed")

            // One header byte every 200 ms: never a complete request head.
            // The pauses are slept on a thread of their own: the tests' cooperative pool, busy with other suites, can
            // wake a task seconds late, and a late byte would let the idle timeout close the connection first.
            let trickle = try RawConnection(port: server.port)
            let header = Array("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ".utf8) + Array(repeating: UInt8(ascii: "a"), count: 100)
            #expect(await blocking {
                for byte in header {
                    guard trickle.send([byte]) else { return true }
                    usleep(200_000)
                }
                return trickle.waitForClose(atMost: 1)
            }, "a header trickled a byte at a time is cut off")

            // A body a byte at a time: every byte is activity to the idle timeout, but the body has 2 s to arrive.
            // Sending stops once the answer is there: a byte sent after the server closed makes it reset the
            // connection, and a reset discards the answer unread on this side.
            let slowBody = try RawConnection(port: server.port)
            #expect(slowBody.send(Array("POST /v1/orders/o-1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n".utf8)))
            let slowAnswer = await blocking {
                for _ in 0..<20 {
                    guard !slowBody.hasSomethingToRead(), slowBody.send(Array("{".utf8)) else { break }
                    usleep(300_000)
                }
                return slowBody.readAnswer(atMost: 20)
            }
            #expect(slowAnswer.hasPrefix("HTTP/1.1 408"), "\(slowAnswer)")

            // 100 MB declared, none sent: the answer comes at once.
            let oversized = try RawConnection(port: server.port)
            #expect(oversized.send(Array("POST /v1/orders/o-1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\nContent-Type: application/json\r\nContent-Length: 104857600\r\n\r\n".utf8)))
            let answer = await blocking { oversized.readAnswer(atMost: 20) }
            #expect(answer.hasPrefix("HTTP/1.1 413"), "\(answer)")
            #expect(answer.contains("256 KiB"), "\(answer)")
        }
    }

    /// A keep-alive connection the history lane answers is busy, not idle: the idle timeout counts from its last
    /// request. The lane answers in front of the codec to HTTP types, and the connection's idle state sits in front
    /// of it (`ConnectionIdleState`); Hummingbird's own state handler, behind the lane, saw none of its requests and
    /// would have closed such a connection `--idle-timeout` after the last request the router answered.
    @Test func aConnectionTheHistoryLaneAnswersIsNotClosedAsIdle() async throws {
        try await TestDatabase.withURL { url, client in
            let tokens = TokenStore(client: client)
            let writer = try await tokens.create(name: "writer", scopes: [.eventsWrite])
            let reader = try await tokens.create(name: "reader", scopes: [.eventsRead])
            // 2 s, not 1: on a machine busy with the whole suite a 1 s timeout has closed a connection between two
            // requests (see below). The reads go on for two and a half timeouts.
            let server = try await RunningServer.start(databaseURL: url, arguments: ["--idle-timeout", "2"])
            defer { server.stop() }
            let connection = try RawConnection(port: server.port)
            let event = Lifecycle().created.json.canonicalJSON
            let post = "POST /v1/orders/o-1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(writer)\r\n"
                + "Content-Type: application/json\r\nContent-Length: \(event.utf8.count)\r\n\r\n\(event)"
            let history = "GET /v1/orders/o-1/history HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(reader)\r\n\r\n"
            // The router answers the append and renders the page; the lane answers every read after it, one after
            // another.
            let answers = await blocking {
                guard connection.send(Array(post.utf8)) else { return ["the append could not be sent"] }
                var answers = [connection.readAnswer(atMost: 20)]
                let started = Date()
                while Date().timeIntervalSince(started) < 5 {
                    guard connection.send(Array(history.utf8)) else { return answers + ["closed"] }
                    answers.append(connection.readAnswer(atMost: 20))
                }
                return answers
            }
            #expect(answers.first?.hasPrefix("HTTP/1.1 201") == true, "\(answers.first ?? "")")
            let reads = answers.dropFirst()
            #expect(reads.count >= 4, "\(reads.count) reads")
            #expect(reads.allSatisfy { $0.hasPrefix("HTTP/1.1 200") }, "\(reads.filter { !$0.hasPrefix("HTTP/1.1 200") })")
        }
    }

    /// On SIGTERM, a keep-alive connection with nothing being answered is closed at once (graceful shutdown,
    /// `ConnectionIdleState`), not left open until its idle timeout, and `serve` exits.
    @Test func aKeepAliveConnectionIsClosedAtShutdown() async throws {
        try await Self.withServer(["--idle-timeout", "120"]) { server, _ in
            let connection = try RawConnection(port: server.port)
            let answered = await blocking {
                connection.send(Array("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n".utf8)) ? connection.readAnswer(atMost: 20) : ""
            }
            #expect(answered.hasPrefix("HTTP/1.1 200"), "\(answered)")
            server.terminate()
            #expect(await blocking { connection.waitForClose(atMost: 3) }, "closed at shutdown, not after its idle timeout or the server's own grace")
            #expect(await server.exitStatus(within: .seconds(20)) == 0)
        }
    }

    /// A body in two parts, within its time, is answered as usual, and its deadline ends with it: the connection goes
    /// on serving past the time the body had (a timer left running cut it at 2 s). The idle timeout is long here: on a
    /// machine busy with the whole suite, a 1 s one has closed a connection between two requests.
    @Test func aBodyInPartsWithinItsTimeIsServedAndItsDeadlineEndsWithIt() async throws {
        try await Self.withServer(["--idle-timeout", "60", "--body-timeout", "2"]) { server, token in
            let split = try RawConnection(port: server.port)
            #expect(split.send(Array("POST /v1/orders/o-2/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{".utf8)))
            let splitAnswer = await blocking {
                usleep(300_000)
                return split.send(Array("}".utf8)) ? split.readAnswer(atMost: 20) : ""
            }
            #expect(splitAnswer.hasPrefix("HTTP/1.1 400"), "\(splitAnswer)")
            let started = ContinuousClock.now
            let later = await blocking {
                (0..<8).map { _ -> String in
                    usleep(300_000)
                    guard split.send(Array("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n".utf8)) else { return "closed" }
                    return split.readAnswer(atMost: 20)
                }
            }
            #expect(ContinuousClock.now - started > .seconds(2), "the requests outlast the body's time")
            #expect(later.allSatisfy { $0.hasPrefix("HTTP/1.1 200") }, "\(later)")
        }
    }
}

/// A TCP connection to serve on loopback, written and read byte by byte as a slow or hostile client would.
final class RawConnection: @unchecked Sendable {
    let socket: Int32

    init(port: Int) throws {
        socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw POSIXError(.ECONNREFUSED) }
    }

    deinit { close(socket) }

    /// False once the server has closed the connection.
    func send(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
    }

    /// True when the server has written something (or closed): a read would not block.
    func hasSomethingToRead() -> Bool {
        var pending = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        return poll(&pending, 1, 0) > 0
    }

    /// Waits (blocking this thread) until the server closes the connection, at most `seconds`.
    func waitForClose(atMost seconds: Int) -> Bool {
        var pending = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        let deadline = Date().addingTimeInterval(TimeInterval(seconds))
        var byte: UInt8 = 0
        while Date() < deadline {
            guard poll(&pending, 1, 100) > 0 else { continue }
            let read = recv(socket, &byte, 1, 0)
            if read <= 0 { return true }
        }
        return false
    }

    /// What the server answers, read until it closes or `seconds` pass.
    func readAnswer(atMost seconds: Int) -> String {
        var pending = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        let deadline = Date().addingTimeInterval(TimeInterval(seconds))
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while Date() < deadline {
            guard poll(&pending, 1, 100) > 0 else {
                if !answer.isEmpty { break }
                continue
            }
            let read = recv(socket, &buffer, buffer.count, 0)
            if read <= 0 { break }
            answer += buffer[0..<read]
        }
        return String(decoding: answer, as: UTF8.self)
    }
}
