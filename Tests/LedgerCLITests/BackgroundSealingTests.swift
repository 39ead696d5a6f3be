import Foundation
@testable import LedgerPostgres
import LedgerTestSupport
import Testing

/// `serve` seals the digest on a thread of its own at a lower priority than the requests' event loops
/// (`BackgroundExecutor`): its pages of re-checked events used to stall the requests queued behind them on an event
/// loop (single appends' p99 13 → 40 ms, BENCHMARKS.md). The seal must still cover everything, and the thread must be
/// the one doing the work.
@Suite("CLI: serve seals in the background")
struct BackgroundSealingTests {
    @Test func theSealerRunsOnItsOwnLowerPriorityThreadAndCoversEveryEvent() async throws {
        try await TestDatabase.withURL { url, client in
            try await ServeShutdownTests.recordBacklog(on: client)  // 3,024 events waiting for their first seal
            let events = try await EventStore(client: client).count("events")
            let server = try await RunningServer.start(databaseURL: url, arguments: ["--seal-interval", "1"])
            defer { server.stop() }
            // Waiting for a state, bounded: the first seal starts a second after serve does.
            let digests = LedgerDigests(client: client)
            let deadline = ContinuousClock.now + .seconds(60)
            while ContinuousClock.now < deadline, (try await digests.latest()?.eventCount ?? 0) < Int64(events) {
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(try await digests.latest()?.eventCount == Int64(events), "the seal covers every event")

            let threads = try Self.threads(of: server.launch.process.processIdentifier)
            let sealer = try #require(threads.first { $0.name == "ledger-bg" }, "\(threads.map(\.name))")
            #expect(sealer.nice == 5)
            #expect(threads.filter { $0.name.hasPrefix("NIO-") }.allSatisfy { $0.nice == 0 }, "the event loops keep their priority")
            // Checking 3,024 events' seals takes tens of milliseconds of CPU; an idle thread has used microseconds.
            #expect(sealer.cpu > .milliseconds(5), "the sealer's thread did the checking: \(sealer.cpu) on CPU")
        }
    }

    struct ThreadInfo {
        let name: String
        let nice: Int
        let cpu: Duration
    }

    /// The process's threads from /proc: name, nice value (stat field 19) and time on CPU (schedstat, nanoseconds).
    static func threads(of pid: Int32) throws -> [ThreadInfo] {
        let tasks = "/proc/\(pid)/task"
        return try FileManager.default.contentsOfDirectory(atPath: tasks).compactMap { tid in
            let name = try String(contentsOfFile: "\(tasks)/\(tid)/comm", encoding: .utf8).trimmingCharacters(in: .newlines)
            let stat = try String(contentsOfFile: "\(tasks)/\(tid)/stat", encoding: .utf8)
            // After the ")" that ends the name: field 3 onwards; nice is field 19.
            guard let close = stat.lastIndex(of: ")") else { return nil }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            let schedstat = try String(contentsOfFile: "\(tasks)/\(tid)/schedstat", encoding: .utf8).split(separator: " ")
            guard fields.count > 16, let nice = Int(fields[16]), let nanoseconds = schedstat.first.flatMap({ Int64($0) }) else { return nil }
            return ThreadInfo(name: name, nice: nice, cpu: .nanoseconds(nanoseconds))
        }
    }
}
