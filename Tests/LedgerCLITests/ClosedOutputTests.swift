import Foundation
import LedgerCore
@testable import LedgerPostgres
import LedgerTestSupport
import Testing

/// A command whose reader goes away (`ledger export | head -n 1`) stops quietly, as other Unix tools do: exit status
/// 141 and nothing on standard error. It used to trap in Foundation's `FileHandle.write` ("Broken pipe", a crash
/// report and a 123-line backtrace).
@Suite("CLI: a closed output pipe ends a command quietly")
struct ClosedOutputTests {
    /// Every command writes through `StandardOutput`; `export` is the one whose output here is far larger than what a
    /// pipe holds (about a megabyte), so the reader is sure to leave while it still writes.
    @Test(arguments: [["export", "--format", "csv"], ["export"]])
    func aReaderThatStopsAfterOneLineEndsTheCommandQuietly(arguments: [String]) async throws {
        try await TestDatabase.withURL { url, client in
            // About 1,200 events: far more output than a pipe holds, so the command is still writing when the reader leaves.
            let ledger = Ledger(client: client)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for worker in 0..<4 {
                    group.addTask {
                        for n in 0..<50 {
                            var lifecycle = Lifecycle()
                            lifecycle.accountId = "account-" + String(repeating: "a", count: 100)
                            lifecycle.transactionId = "pipe-\(worker)-\(n)"
                            _ = try await ledger.record(
                                orderId: "pipe-\(worker)-\(n)", events: Array(lifecycle.happyPath.dropLast()),
                                metadata: EventMetadata(actor: "test-suite", requestId: nil))
                        }
                    }
                }
                try await group.waitForAll()
            }
            let (status, firstLine, standardError) = try await Self.runReadingOneLine(arguments, databaseURL: url)
            #expect(!firstLine.isEmpty)
            #expect(status == 141, "exit status; standard error:\n\(standardError)")
            #expect(standardError.isEmpty, "\(standardError)")
        }
    }

    /// Runs `ledger` with its standard output on a pipe, reads one line, closes the pipe, and waits for the exit.
    static func runReadingOneLine(_ arguments: [String], databaseURL: String) async throws -> (Int32, String, String) {
        let launch = try LedgerBinary.prepare(arguments, databaseURL: databaseURL, environment: [:])
        defer { try? FileManager.default.removeItem(at: launch.directory) }
        let output = Pipe()
        launch.process.standardOutput = output
        let exit = ExitWatch(launch.process)
        try launch.process.run()
        // The parent's copy of the write end goes, so that the command's is the pipe's only writer.
        try? output.fileHandleForWriting.close()
        // Blocking reads, on a thread of their own rather than one of the tests' cooperative pool.
        let firstLine: String = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                var line: [UInt8] = []
                while let byte = try? output.fileHandleForReading.read(upToCount: 1)?.first, byte != UInt8(ascii: "\n") {
                    line.append(byte)
                }
                try? output.fileHandleForReading.close()
                continuation.resume(returning: String(decoding: line, as: UTF8.self))
            }
        }
        return (await exit.status(), firstLine, try launch.standardError())
    }
}

/// A process's exit status, watched from before it runs.
final class ExitWatch: @unchecked Sendable {
    private let lock = NSLock()
    private var exited: Int32?
    private var waiter: CheckedContinuation<Int32, Never>?

    init(_ process: SpawnedProcess) {
        process.terminationHandler = { [self] process in
            lock.lock()
            exited = process.terminationStatus
            let waiting = waiter
            waiter = nil
            lock.unlock()
            waiting?.resume(returning: process.terminationStatus)
        }
    }

    func status() async -> Int32 {
        await withCheckedContinuation { continuation in
            lock.lock()
            if let exited {
                lock.unlock()
                continuation.resume(returning: exited)
            } else {
                waiter = continuation
                lock.unlock()
            }
        }
    }
}
