import Foundation

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

    static func run(_ arguments: [String], databaseURL: String, environment extra: [String: String] = [:]) async throws -> Outcome {
        let process = Process()
        process.executableURL = url
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment.merging(extra) { _, given in given }
        environment["DATABASE_URL"] = databaseURL
        process.environment = environment
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let (outURL, errURL) = (directory.appendingPathComponent("out"), directory.appendingPathComponent("err"))
        for file in [outURL, errURL] { try Data().write(to: file) }
        process.standardOutput = try FileHandle(forWritingTo: outURL)
        process.standardError = try FileHandle(forWritingTo: errURL)
        process.standardInput = FileHandle.nullDevice
        // Waiting through the termination handler, not waitUntilExit, which would tie up a test thread's run loop.
        let status: Int32 = try await withCheckedThrowingContinuation { continuation in
            process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
            do { try process.run() } catch { continuation.resume(throwing: error) }
        }
        return Outcome(
            status: status, stdout: try String(contentsOf: outURL, encoding: .utf8),
            stderr: try String(contentsOf: errURL, encoding: .utf8))
    }
}
