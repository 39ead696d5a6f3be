import Foundation
import LedgerCore
@testable import LedgerPostgres
import LedgerTestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `ledger migrate` sets up `ledger_service`; `ledger serve` connected as it records events, and warns when it is
/// connected as a role that could change them.
@Suite("CLI: migrate and serve as the service role")
struct ServeCommandTests {
    @Test func migrateLetsTheServiceRoleLogInAndServeRecordsThroughIt() async throws {
        try await TestDatabase.withURL { url, client in
            let migrated = try await LedgerBinary.run(
                ["migrate"], databaseURL: url, environment: ["LEDGER_SERVICE_PASSWORD": "s3cret'pw"])
            #expect(migrated.status == 0, "\(migrated.stderr)")
            #expect(migrated.stdout.contains("database is up to date"))
            #expect(migrated.stdout.contains("ledger_service may log in"))
            #expect(!migrated.stdout.contains("s3cret") && !migrated.stderr.contains("s3cret"), "the password is never printed")
            let secret = try await TokenStore(client: client).create(name: "checkout", scopes: [.eventsWrite, .eventsRead])

            let serviceURL = url.replacingOccurrences(of: "postgres://postgres@", with: "postgres://ledger_service@")
            let server = try await RunningServer.start(databaseURL: serviceURL, environment: ["LOG_LEVEL": "trace"])
            defer { server.stop() }
            let created = try await server.post("/v1/orders/cli-1/events", token: secret, body: Lifecycle().created.json.canonicalJSON)
            #expect(created == 201)
            let guessed = "olt_" + String(repeating: "G", count: 43)
            #expect(try await server.post("/v1/orders/cli-1/events", token: guessed, body: "{}") == 401)
            #expect(!server.standardError.contains("may change or remove events"), "\(server.standardError)")
            // Secrets are never logged, even at trace level: neither a valid one nor a guess.
            #expect(server.standardError.contains("POST /v1/orders/cli-1/events 201"), "the log was read")
            // The line carries the logger's metadata (Hummingbird's request id) and the message's own, sorted by key,
            // as `StreamLogHandler` writes them (`StandardErrorLogHandler` keeps the logger's aside until then).
            let line = server.standardError.split(separator: "\n").first { $0.contains("POST /v1/orders/cli-1/events 201") }
            #expect(line?.contains(/: actor=checkout hb\.request\.id=\S+ request_id=\S+ \[/) == true, "\(line ?? "")")
            #expect(!server.output.contains(secret) && !server.output.contains(guessed))
            #expect(try await EventStore(client: client).count("events") == 1)

            // The service's role may not do the operator's work.
            let tokens = try await LedgerBinary.run(
                ["tokens", "create", "--name", "intruder", "--scopes", "events:write"], databaseURL: serviceURL)
            #expect(tokens.status != 0)
            #expect(try await EventStore(client: client).count("api_tokens") == 1)
        }
    }

    @Test func serveWarnsWhenConnectedAsARoleThatCouldChangeEvents() async throws {
        try await TestDatabase.withURL { url, _ in
            let server = try await RunningServer.start(databaseURL: url)
            defer { server.stop() }
            #expect(server.standardError.contains("may change or remove events"), "\(server.standardError)")
            #expect(server.address.hasPrefix("http://127.0.0.1:"), "listens on loopback unless told otherwise")
        }
    }
}

/// `ledger serve --port 0` in the background, until `stop()`.
final class RunningServer: Sendable {
    let launch: LedgerBinary.Launch
    /// As announced: `http://HOST:PORT`.
    let address: String
    let port: Int

    private init(launch: LedgerBinary.Launch, address: String, port: Int) {
        self.launch = launch
        self.address = address
        self.port = port
    }

    static func start(databaseURL: String, arguments: [String] = [], environment: [String: String] = [:]) async throws -> RunningServer {
        let launch = try LedgerBinary.prepare(
            // A database deadline of 60 s, not serve's 5 s: these tests are about what serve does, on a machine busy
            // with the whole suite; the deadline has tests of its own.
            // No sealing unless a test asks for it.
            ["serve", "--port", "0", "--database-deadline", "60"]
                + (arguments.contains("--seal-interval") ? [] : ["--seal-interval", "0"]) + arguments,
            databaseURL: databaseURL, environment: environment)
        try launch.process.run()
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline, launch.process.isRunning {
            if let line = try launch.standardOutput().split(separator: "\n").first(where: { $0.hasPrefix("ledger listening on http://") }),
               let address = line.split(separator: " ").dropFirst(3).first,
               let port = address.split(separator: ":").last.flatMap({ Int($0) }) {
                return RunningServer(launch: launch, address: String(address), port: port)
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        launch.process.terminate()
        throw ServeDidNotStart(standardError: (try? launch.standardError()) ?? "")
    }

    struct ServeDidNotStart: Error, CustomStringConvertible {
        let standardError: String
        var description: String { "ledger serve did not announce its address: \(standardError)" }
    }

    var standardError: String { (try? launch.standardError()) ?? "" }
    /// Everything it wrote: standard output and standard error.
    var output: String { ((try? launch.standardOutput()) ?? "") + standardError }

    func post(_ path: String, token: String?, body: String) async throws -> Int {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        request.httpMethod = "POST"
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data(body.utf8)
        let (_, response) = try await URLSession.shared.data(for: request)
        return (response as? HTTPURLResponse)?.statusCode ?? 0
    }

    func get(_ path: String, token: String) async throws -> JSONValue {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        let (data, _) = try await URLSession.shared.data(for: request)
        return try JSONValue(parsing: Array(data))
    }

    /// The body of an unauthenticated GET (`/metrics`, `/healthz`).
    func text(_ path: String) async throws -> String {
        let (data, _) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        return String(decoding: data, as: UTF8.self)
    }

    /// SIGKILL: the process ends at once, whatever it was doing (a node lost mid-load).
    func killAbruptly() {
        _ = Glibc.kill(launch.process.processIdentifier, SIGKILL)
    }

    /// Sends SIGTERM and returns: `serve` ends by itself. Not `waitUntilExit`, which on Linux spins the calling
    /// thread's run loop — a thread of the two-thread cooperative pool on this machine, which every other test needs.
    /// (Dropping the test's database afterwards ends the server's connections in any case.)
    func stop() {
        launch.process.terminate()
        try? FileManager.default.removeItem(at: launch.directory)
    }
}
