import ArgumentParser
import Foundation
import LedgerCore
import LedgerPostgres

/// `ledger rebuild`: rebuilds the projections from the event log and swaps them in (see `ProjectionRebuild`).
struct RebuildCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rebuild", abstract: "Rebuild every projection from the event log, while the service runs.")

    @Option(name: .customLong("page-size"), help: "Events read per page.") var pageSize = ProjectionRebuild.defaultPageSize
    @OptionGroup var database: DatabaseOptions

    func validate() throws {
        // 0 would read empty pages forever; past a million, one page no longer fits the promise of flat memory.
        guard (1...1_000_000).contains(pageSize) else { throw ValidationError("--page-size must be 1 to 1000000") }
    }

    func run() async throws {
        let pageSize = pageSize
        let result = try await database.withLedger { opened in
            let meter = ProgressMeter()
            return try await opened.operations.rebuild(pageSize: pageSize) { meter.show($0) }
        }
        let seconds = result.elapsed.seconds
        try StandardOutput.line(
            "rebuilt \(result.orders) orders from \(result.events) events in \(String(format: "%.2f", seconds)) s "
                + "(\(Int(Double(result.events) / max(seconds, 0.001))) events/s); "
                + "\(result.caughtUp) caught up at the swap")
    }
}

/// Rebuild progress on standard error: one line redrawn in place on a terminal, a plain line every 5 s otherwise.
final class ProgressMeter: @unchecked Sendable {
    private let isTerminal = isatty(STDERR_FILENO) == 1
    private var lastPrinted: Duration = .zero

    func show(_ progress: ProjectionRebuild.Progress) {
        if case .catchingUp(let orders) = progress.phase {
            // Said always: from here until the swap commits, appends wait.
            let line = "catching up \(orders) orders appended to meanwhile; writers wait, readers go on, until the swap"
            try? FileHandle.standardError.write(contentsOf: Data((line + "\n").utf8))
            return
        }
        let done = progress.events >= progress.totalEvents
        guard isTerminal || done || progress.elapsed - lastPrinted >= .seconds(5) else { return }
        lastPrinted = progress.elapsed
        let seconds = progress.elapsed.seconds
        let rate = Double(progress.events) / max(seconds, 0.001)
        let eta = rate > 0 ? Double(progress.totalEvents - progress.events) / rate : 0
        let line = "\(progress.events)/\(progress.totalEvents) events, \(Int(rate)) events/s, ETA \(Int(eta.rounded())) s"
        try? FileHandle.standardError.write(contentsOf: Data((isTerminal ? "\r\u{1B}[K" + line + (done ? "\n" : "") : line + "\n").utf8))
    }
}

