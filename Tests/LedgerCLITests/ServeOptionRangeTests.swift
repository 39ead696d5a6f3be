import Foundation
import Testing

/// `serve`'s numeric options, refused before anything starts when they are out of range: `--seal-interval` or
/// `--database-deadline` of Int.max seconds once trapped (a Duration added to the clock), `--pool-size 0` left every
/// request waiting for a connection that never comes, `--port 70000` silently listened on 4464.
@Suite("CLI: serve's and rebuild's option ranges")
struct ServeOptionRangeTests {
    @Test(arguments: [
        ("--seal-interval=9223372036854775807", "--seal-interval must be 0 to 31536000 seconds"),
        ("--seal-interval=-1", "--seal-interval must be 0 to 31536000 seconds"),
        ("--database-deadline=9223372036854775807", "--database-deadline must be at most 86400 seconds"),
        ("--pool-size=0", "--pool-size must be at least 1"),
        ("--pool-size=-1", "--pool-size must be at least 1"),
        ("--port=70000", "--port must be 0 to 65535"),
        ("--port=-1", "--port must be 0 to 65535"),
        ("--recovery-interval=9223372036854775807", "--recovery-interval must be 0 to 86400 seconds"),
        ("--recovery-payment-after=-1", "--recovery-payment-after must be 0 to 2592000 seconds"),
        ("--recovery-receipt-after=9223372036854775807", "--recovery-receipt-after must be 0 to 2592000 seconds"),
        ("--recovery-lease=0", "--recovery-lease must be 1 to 86400 seconds"),
    ])
    func anOutOfRangeOptionIsAUsageError(option: String, words: String) async throws {
        // validate() runs before any database is touched, so an unreachable URL is never dialled.
        let outcome = try await LedgerBinary.run(["serve", option], databaseURL: "postgres://nobody@127.0.0.1:1/none")
        #expect(outcome.status == 64, "\(option): \(outcome.status) \(outcome.stderr.suffix(300))")
        #expect(outcome.stderr.contains(words), "\(option): \(outcome.stderr.suffix(300))")
    }

    /// `ledger rebuild --page-size 0` read empty pages forever.
    @Test(arguments: ["--page-size=0", "--page-size=-5", "--page-size=1000001"])
    func anOutOfRangeRebuildPageSizeIsAUsageError(option: String) async throws {
        let outcome = try await LedgerBinary.run(["rebuild", option], databaseURL: "postgres://nobody@127.0.0.1:1/none")
        #expect(outcome.status == 64, "\(option): \(outcome.status) \(outcome.stderr.suffix(300))")
        #expect(outcome.stderr.contains("--page-size must be 1 to 1000000"), "\(option): \(outcome.stderr.suffix(300))")
    }
}
