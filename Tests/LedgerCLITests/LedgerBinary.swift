import Foundation
import LedgerTestSupport

/// The `ledger` executable built next to the test bundle, run as a user would run it.
enum LedgerBinary {
    struct Outcome {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    static var url: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("ledger")
    }

    static func run(_ arguments: [String], databaseURL: String, environment: [String: String] = [:]) async throws -> Outcome {
        try await run(prepare(arguments, databaseURL: databaseURL, environment: environment))
    }

    /// Runs the command as the only child of a python3 process, which prints the command's own peak resident set
    /// (`getrusage(RUSAGE_CHILDREN)`, KiB) as the last line of standard error: the test process's children are many
    /// (servers of other tests), so its own children's peak would not say which one it was.
    static func runMeasuringPeakMemory(_ arguments: [String], databaseURL: String) async throws -> (Outcome, peakMiB: Int) {
        let script = """
            import resource, subprocess, sys
            code = subprocess.call(sys.argv[1:])
            print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)
            sys.exit(code)
            """
        let launch = try prepare(["python3", "-c", script, url.path] + arguments, databaseURL: databaseURL, environment: [:])
        launch.process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        var outcome = try await run(launch)
        let lines = outcome.stderr.split(separator: "\n")
        outcome.stderr = lines.dropLast().joined(separator: "\n")
        return (outcome, (lines.last.flatMap { Int($0) } ?? Int.max) / 1024)
    }

    /// How long a command may run before it is killed and its test fails: well past the longest (a million-line
    /// reconcile, ~4 minutes under the whole suite), well short of CI's half-hour watchdog, which a hung command
    /// (once, a `serve` whose failed start deadlocked) would otherwise hold with no word of which test it was.
    static let limit = Duration.seconds(600)

    private static func run(_ launch: Launch) async throws -> Outcome {
        defer { try? FileManager.default.removeItem(at: launch.directory) }
        let watchdog = Task {
            try await Task.sleep(for: limit)
            if launch.process.isRunning { kill(launch.process.processIdentifier, SIGKILL) }
        }
        defer { watchdog.cancel() }
        // Waiting through the termination handler, not waitUntilExit, which would tie up a test thread's run loop.
        let status: Int32 = try await withCheckedThrowingContinuation { continuation in
            launch.process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
            do { try launch.process.run() } catch { continuation.resume(throwing: error) }
        }
        var stderr = try launch.standardError()
        if launch.process.terminationReason == .uncaughtSignal, status == SIGKILL {
            stderr += "\n(killed after \(limit): it had not ended)"
        }
        return Outcome(status: status, stdout: try launch.standardOutput(), stderr: stderr)
    }

    /// Runs the command again until `done` holds for its outcome (or 120 s pass), and returns the last outcome. For
    /// `ledger seal` and `ledger digest`: sealing stops below the oldest transaction open anywhere in the cluster,
    /// and the tests running beside this one keep transactions open in their own databases.
    static func run(
        _ arguments: [String], databaseURL: String, until done: (Outcome) -> Bool
    ) async throws -> Outcome {
        let deadline = ContinuousClock.now + .seconds(120)
        while true {
            let outcome = try await run(arguments, databaseURL: databaseURL)
            if done(outcome) || ContinuousClock.now >= deadline { return outcome }
        }
    }

    /// A `ledger` process ready to run, its output going to files in a directory of its own.
    struct Launch {
        let process: SpawnedProcess
        let directory: URL
        var outURL: URL { directory.appendingPathComponent("out") }
        var errURL: URL { directory.appendingPathComponent("err") }
        func standardOutput() throws -> String { try String(contentsOf: outURL, encoding: .utf8) }
        func standardError() throws -> String { try String(contentsOf: errURL, encoding: .utf8) }
    }

    static func prepare(_ arguments: [String], databaseURL: String, environment extra: [String: String]) throws -> Launch {
        let process = SpawnedProcess()
        process.executableURL = url
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment.merging(extra) { _, given in given }
        environment["DATABASE_URL"] = databaseURL
        process.environment = environment
        let launch = Launch(
            process: process,
            directory: FileManager.default.temporaryDirectory.appendingPathComponent("ledger-cli-\(UUID().uuidString)"))
        try FileManager.default.createDirectory(at: launch.directory, withIntermediateDirectories: true)
        for file in [launch.outURL, launch.errURL] { try Data().write(to: file) }
        process.standardOutput = try FileHandle(forWritingTo: launch.outURL)
        process.standardError = try FileHandle(forWritingTo: launch.errURL)
        process.standardInput = FileHandle.nullDevice
        return launch
    }
}
