import Foundation
import Synchronization
import LedgerCore
@testable import LedgerPostgres
import LedgerTestSupport
import PostgresNIO
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `serve` ends on SIGTERM within a bounded time, whatever ran before. It used to hang for good when the signal came
/// while the digest sealer was at work (10 of 10 signals during a seal, loaded or idle): the database clients stopped
/// with the HTTP server, and the sealer, holding one pooled connection, waited for a second forever. Each test loads
/// a real `serve` with sealing every second, signals it while the first seal runs (over a backlog of events, so the
/// seal takes a while) and the load still runs, and waits for it to be gone.
@Suite("CLI: serve stops on SIGTERM after load")
struct ServeShutdownTests {
    static let exitLimit: Duration = .seconds(20)

    @Test func serveExitsAfterALoadOfAppendsWhileSealing() async throws {
        try await TestDatabase.withURL { url, client in
            let token = try await TokenStore(client: client).create(name: "load", scopes: [.eventsWrite, .eventsRead])
            try await Self.recordBacklog(on: client)
            let server = try await RunningServer.start(databaseURL: url, arguments: ["--seal-interval", "1"])
            defer { server.stop() }
            let status = try await Self.signalDuringLoad(server) { client in
                let order = "shutdown-\(client)-\(UUID().uuidString.prefix(8))"
                _ = try await server.post("/v1/orders/\(order)/events", token: token, body: Lifecycle().created.json.canonicalJSON)
            }
            #expect(status == 0, "exit status; log:\n\(server.standardError)")
        }
    }

    @Test func serveExitsAfterALoadOfHistoryReadsWhileSealing() async throws {
        try await TestDatabase.withURL { url, client in
            let token = try await TokenStore(client: client).create(name: "load", scopes: [.eventsWrite, .eventsRead])
            try await Self.recordBacklog(on: client)
            let server = try await RunningServer.start(databaseURL: url, arguments: ["--seal-interval", "1"])
            defer { server.stop() }
            for event in Lifecycle().happyPath {
                #expect(try await server.post("/v1/orders/read-me/events", token: token, body: event.json.canonicalJSON) == 201)
            }
            let status = try await Self.signalDuringLoad(server) { _ in
                _ = try await server.get("/v1/orders/read-me/history", token: token)
            }
            #expect(status == 0, "exit status; log:\n\(server.standardError)")
        }
    }

    @Test func serveOnTheEmbeddedClusterStopsItsPostgreSQLToo() async throws {
        let dataDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-shutdown-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dataDirectory) }
        // No DATABASE_URL: serve starts (and owns) a cluster in the data directory.
        let server = try await RunningServer.start(
            databaseURL: "", arguments: ["--seal-interval", "1"], environment: ["LEDGER_DATA_DIR": dataDirectory.path])
        defer { server.stop() }
        let token = try String(contentsOf: dataDirectory.appendingPathComponent("dev-token"), encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let status = try await Self.signalDuringLoad(server) { client in
            _ = try await server.post(
                "/v1/orders/embedded-\(client)-\(UUID().uuidString.prefix(8))/events", token: token,
                body: Lifecycle().created.json.canonicalJSON)
        }
        #expect(status == 0, "exit status; log:\n\(server.standardError)")
        let postmaster = dataDirectory.appendingPathComponent("pg/postmaster.pid")
        #expect(!FileManager.default.fileExists(atPath: postmaster.path), "the cluster serve started is stopped: \(server.standardError)")
    }

    /// A serve whose database went away under load (dropped, as a test's is at its end) stayed running after SIGTERM
    /// for good: its pool waited for leases that never returned. It now ends within the shutdown limit.
    @Test func serveExitsAfterItsDatabaseWentAwayUnderLoad() async throws {
        let (database, name) = try await TestDatabase.fresh()
        defer { Task { try? await TestDatabase.drop(name) } }
        let url = try await TestDatabase.url(of: name)
        let token = try await database.withClient { client in
            try await TokenStore(client: client).create(name: "load", scopes: [.eventsWrite, .eventsRead])
        }
        let server = try await RunningServer.start(databaseURL: url, arguments: ["--seal-interval", "1", "--database-deadline", "2"])
        defer { server.stop() }
        let done = Flag()
        async let load: Void = withTaskGroup(of: Void.self) { group in
            for client in 0..<8 {
                group.addTask {
                    while !done.isSet {
                        _ = try? await server.post(
                            "/v1/orders/gone-\(client)-\(UUID().uuidString.prefix(8))/events", token: token,
                            body: Lifecycle().created.json.canonicalJSON)
                    }
                }
            }
        }
        try? await Task.sleep(for: .seconds(1))
        try await TestDatabase.drop(name)
        try? await Task.sleep(for: .seconds(1))
        server.terminate()
        let status = await server.exitStatus(within: .seconds(40))
        done.set()
        await load
        #expect(status != nil, "serve is still running 40 s after SIGTERM; log:\n\(server.standardError.suffix(2000))")
    }

    /// A second serve on one data directory used to start silently, and the first one's stop took the cluster from
    /// under it; after a `kill -9`, the next serve left the orphaned cluster running at its own stop.
    @Test func oneServePerDataDirectoryAndAnOrphanedClusterIsAdoptedAndStopped() async throws {
        let dataDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-lock-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dataDirectory) }
        let environment = ["LEDGER_DATA_DIR": dataDirectory.path]
        let first = try await RunningServer.start(databaseURL: "", environment: environment)
        defer { first.stop() }
        let second = try await LedgerBinary.run(["serve", "--port", "0"], databaseURL: "", environment: environment)
        #expect(second.status == 1)
        #expect(second.stderr.contains("another ledger serve (pid \(first.launch.process.processIdentifier)) is using"), "\(second.stderr)")
        // The port is taken too: said as such, with what to do, before any database is started for it.
        let samePort = try await LedgerBinary.run(["serve", "--port", String(first.port)], databaseURL: "",
                                                  environment: ["LEDGER_DATA_DIR": dataDirectory.path + "-other"])
        #expect(!FileManager.default.fileExists(atPath: dataDirectory.path + "-other"), "a database was started for it")
        try? FileManager.default.removeItem(atPath: dataDirectory.path + "-other")
        #expect(samePort.stderr.contains("port \(first.port) on 127.0.0.1 is already in use"), "\(samePort.stderr)")

        first.killAbruptly()
        _ = await first.exitStatus(within: Self.exitLimit)
        let postmaster = dataDirectory.appendingPathComponent("pg/postmaster.pid")
        #expect(FileManager.default.fileExists(atPath: postmaster.path), "kill -9 leaves the cluster running")
        let next = try await RunningServer.start(databaseURL: "", environment: environment)
        defer { next.stop() }
        #expect(next.standardError.contains("adopting the embedded database left running in \(dataDirectory.path)"), "\(next.standardError)")
        next.terminate()
        #expect(await next.exitStatus(within: Self.exitLimit) == 0)
        #expect(!FileManager.default.fileExists(atPath: postmaster.path), "the adopted cluster is stopped with the serve that adopted it")
    }

    /// 3,000 unsealed events: the first seal of the serve started next works through them for a while.
    static func recordBacklog(on client: SessionPool) async throws {
        let ledger = Ledger(client: client)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    for n in 0..<63 {
                        var lifecycle = Lifecycle()
                        lifecycle.transactionId = "backlog-\(worker)-\(n)"
                        _ = try await ledger.record(
                            orderId: "backlog-\(worker)-\(n)", events: lifecycle.happyPath,
                            metadata: EventMetadata(actor: "test-suite", requestId: nil))
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    /// Runs `request` from 8 clients in a loop, sends SIGTERM 1.1 seconds after serve announced its address (just
    /// after the first seal began),
    /// and returns serve's exit status, or nil if it is still running `exitLimit` after the signal. The clients stop
    /// on a flag, never by cancellation: cancelling a URLSession request as it completes can deadlock Foundation.
    static func signalDuringLoad(
        _ server: RunningServer, request: @escaping @Sendable (Int) async throws -> Void
    ) async throws -> Int32? {
        let done = Flag()
        return await withTaskGroup(of: Int32?.self) { group in
            for client in 0..<8 {
                group.addTask {
                    // Requests fail once serve closes its port: the load ends there, or when the exit is known.
                    while !done.isSet, (try? await request(client)) != nil {}
                    return nil
                }
            }
            group.addTask {
                try? await Task.sleep(for: .milliseconds(1100))
                server.terminate()
                let status = await server.exitStatus(within: Self.exitLimit)
                done.set()
                return status ?? -1
            }
            var status: Int32?
            for await result in group where result != nil { status = result }
            return status == -1 ? nil : status
        }
    }
}

/// A flag set once, read from any task.
final class Flag: Sendable {
    private let value = Mutex(false)
    var isSet: Bool { value.withLock { $0 } }
    func set() { value.withLock { $0 = true } }
}

extension RunningServer {
    /// SIGTERM, as a container runtime or systemd sends it.
    func terminate() {
        _ = Glibc.kill(launch.process.processIdentifier, SIGTERM)
    }

    /// serve's exit status once it has exited, or nil if it is still running after `limit`.
    func exitStatus(within limit: Duration) async -> Int32? {
        let process = launch.process
        return await withCheckedContinuation { continuation in
            let resume = ResumeOnce(continuation)
            process.terminationHandler = { resume($0.terminationStatus) }
            if !process.isRunning { resume(process.terminationStatus) }
            Task {
                try? await Task.sleep(for: limit)
                resume(nil)
            }
        }
    }
}

/// Resumes a continuation with the first value given; later ones are dropped.
private final class ResumeOnce: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<Int32?, Never>?
    init(_ continuation: CheckedContinuation<Int32?, Never>) { self.continuation = continuation }
    func callAsFunction(_ value: Int32?) {
        lock.lock()
        let waiting = continuation
        continuation = nil
        lock.unlock()
        waiting?.resume(returning: value)
    }
}
