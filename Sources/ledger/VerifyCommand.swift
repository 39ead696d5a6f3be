import ArgumentParser
import Foundation
import LedgerPostgres
import Logging

/// `ledger verify`: hash chains, digests and projections; exit status 1 with a report when anything fails.
struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check every event's hash chain, the ledger digest, and the projections against the log.")

    @Option(help: "A digest saved earlier, as DIGEST@POSITION: prove the history up to POSITION is unchanged.")
    var digest: String?
    @Flag(help: "Also verify again every stored signed message (App Store JWS; Alipay's and WeChat Pay's notifications and query answers) with the keys --providers-config configures.")
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
        let audit = try signatures ? signatureAudit() : nil
        let (report, signatureLines, signaturesPassed) = try await database.withLedger { opened in
            let report = try await opened.operations.verify(pinned: pinned)
            guard let audit else { return (report, [String](), true) }
            let (lines, passed) = try await audit.run(opened.operations)
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

    /// The keys of every provider the file configures; a file configuring none is an error: nothing could be checked.
    private func signatureAudit() throws -> SignatureAudit {
        let verifiers = try providers.load(logger: Logger(label: "ledger"))
        guard verifiers.appStore != nil || verifiers.alipay != nil || verifiers.wechatPay != nil else {
            throw ValidationError("--signatures needs the providers' keys: --providers-config (or LEDGER_PROVIDERS_CONFIG) with an appStore, alipay or wechatPay section")
        }
        return SignatureAudit(verifiers: verifiers)
    }
}

/// The report as `verify` prints it: what was checked, then every failure, precisely.
enum VerifyReportText {
    static func render(_ report: VerificationReport) -> String {
        var lines = [
            "checked " + counted(report.eventsChecked, "event") + ", " + counted(report.ordersChecked, "order") + ", "
                + (report.subscriptionsChecked > 0 ? counted(report.subscriptionsChecked, "subscription") + ", " : "")
                + counted(report.checkpointsChecked, "stored digest checkpoint")
        ]
        lines.append(report.brokenEvents.isEmpty ? "hash chains: ok" : "hash chains: \(report.brokenEvents.count) broken")
        for broken in report.brokenEvents {
            lines.append("  \(broken.stream) version \(broken.version) (position \(broken.position)): \(broken.problem)")
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
