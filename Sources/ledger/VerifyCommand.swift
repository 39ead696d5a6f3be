import ArgumentParser
import Foundation
import LedgerPostgres
import LedgerProviders
import Logging

/// `ledger verify`: hash chains, digests and projections; exit status 1 with a report when anything fails.
struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check every event's hash chain, the ledger digest, and the projections against the log.")

    @Option(help: "A digest saved earlier, as DIGEST@POSITION: prove the history up to POSITION is unchanged.")
    var digest: String?
    @Flag(help: "Also verify every stored App Store JWS (notifications, signed transactions) against the configured roots.")
    var signatures = false
    @OptionGroup var database: DatabaseOptions
    @OptionGroup var providers: ProviderOptions

    func run() async throws {
        let pinned = try digest.map { text in
            guard let pinned = PinnedDigest(text) else {
                throw ValidationError("--digest must be DIGEST@POSITION: 64 hex digits, '@', a position (as `ledger digest` prints)")
            }
            return pinned
        }
        let verifier = try signatures ? appStoreVerifier() : nil
        let (report, signatureLines, signaturesPassed) = try await database.withLedger { opened in
            let report = try await opened.operations.verify(pinned: pinned)
            guard let verifier else { return (report, [String](), true) }
            let (lines, passed) = try await Self.verifySignatures(opened.operations, verifier: verifier)
            return (report, lines, passed)
        }
        var text = VerifyReportText.render(report)
        if signatures {
            // The signature lines go before the verdict, which covers them too.
            text = text.split(separator: "\n").dropLast().joined(separator: "\n") + "\n"
                + (signatureLines + [report.passed && signaturesPassed ? "PASSED" : "FAILED"]).joined(separator: "\n")
        }
        announce(text)  // unbuffered: the exit below skips flushing stdout
        if !report.passed || !signaturesPassed { throw ExitCode(1) }
    }

    private func appStoreVerifier() throws -> AppStoreJWSVerifier {
        guard let verifier = try providers.load(logger: Logger(label: "ledger")).appStore else {
            throw ValidationError("--signatures needs the App Store's trusted roots: --providers-config (or LEDGER_PROVIDERS_CONFIG) with an appStore section")
        }
        return verifier
    }

    /// Verifies each stored App Store JWS again (chain at its signedDate, OIDs, signature, app): a report line per
    /// failure and a summary.
    static func verifySignatures(_ operations: Operations, verifier: AppStoreJWSVerifier) async throws -> ([String], Bool) {
        var checked = 0
        var failures: [String] = []
        try await operations.forEachStoredAppStoreJWS { stored in
            checked += 1
            do {
                switch stored.kind {
                case .notification: _ = try await verifier.verifyNotification(stored.jws, now: Date())
                case .transaction: _ = try await verifier.verifyTransaction(stored.jws, now: Date())
                }
            } catch {
                failures.append("  \(stored.location) (\(stored.kind.rawValue)): \(error)")
            }
        }
        let summary = failures.isEmpty
            ? "signatures: ok, \(checked) App Store JWS verified" : "signatures: \(failures.count) of \(checked) App Store JWS fail"
        return ([summary] + failures, failures.isEmpty)
    }
}

/// The report as `verify` prints it: what was checked, then every failure, precisely.
enum VerifyReportText {
    static func render(_ report: VerificationReport) -> String {
        var lines = [
            "checked " + counted(report.eventsChecked, "event") + ", " + counted(report.ordersChecked, "order") + ", "
                + counted(report.checkpointsChecked, "stored digest checkpoint")
        ]
        lines.append(report.brokenEvents.isEmpty ? "hash chains: ok" : "hash chains: \(report.brokenEvents.count) broken")
        for broken in report.brokenEvents {
            lines.append("  order \(broken.orderId) version \(broken.version) (position \(broken.position)): \(broken.problem)")
        }
        if report.checkpointMismatches.isEmpty {
            lines.append("stored digests: ok")
        } else {
            lines.append("stored digests: \(report.checkpointMismatches.count) do not match the events")
            for checkpoint in report.checkpointMismatches {
                lines.append("  after \(checkpoint.eventCount) events: stored \(checkpoint.pinned)")
            }
        }
        if let (pinned, outcome) = report.digest {
            switch outcome {
            case .matched: lines.append("digest \(pinned): ok, the history up to position \(pinned.position) is unchanged")
            case .mismatch(let computed):
                lines.append("digest \(pinned): MISMATCH, the events up to position \(pinned.position) now give \(computed)")
            case .eventsAltered(let count):
                lines.append("digest \(pinned): FAILED, \(count) events up to position \(pinned.position) no longer match their hashes")
            case .positionNotFound: lines.append("digest \(pinned): no event at position \(pinned.position) in the feed")
            }
        }
        lines.append(report.drift.isEmpty ? "projections: ok" : "projections: \(report.drift.count) differences from the fold")
        for drift in report.drift {
            lines.append("  \(drift.table) \(drift.key) \(drift.field): stored \(drift.stored), fold gives \(drift.folded)")
        }
        lines.append(report.passed ? "PASSED" : "FAILED")
        return lines.joined(separator: "\n")
    }
}

/// "1 order", "2 orders".
func counted(_ count: some BinaryInteger, _ noun: String) -> String {
    "\(count) \(noun)\(count == 1 ? "" : "s")"
}
