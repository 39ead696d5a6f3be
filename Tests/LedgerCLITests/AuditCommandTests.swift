import Foundation
import LedgerCore
import LedgerHTTP
@testable import LedgerPostgres
import LedgerTestSupport
import Testing

@Suite("CLI: history, verify, seal, digest, export, rebuild")
struct AuditCommandTests {
    /// Run in another directory, `ledger history` used to create a new, empty cluster there and answer "never seen":
    /// a user thought the data was gone. A command that reads never creates a database, and says where it looked.
    @Test func aReadWhereThereIsNoLedgerCreatesNothingAndSaysWhereItLooked() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("no-ledger-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        for arguments in [["history", "order-1"], ["anomalies"], ["export"]] {
            let outcome = try await LedgerBinary.run(arguments, databaseURL: "", environment: ["LEDGER_DATA_DIR": directory.path])
            #expect(outcome.status != 0, "\(arguments)")
            #expect(outcome.stderr.contains("no ledger database in \(directory.path)"), "\(arguments): \(outcome.stderr)")
            #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("pg").path), "\(arguments) created a cluster")
        }
    }

    @Test func aHistoryThatFindsNothingNamesTheDatabaseItAsked() async throws {
        try await TestDatabase.withURL { url, _ in
            let outcome = try await LedgerBinary.run(["history", "order-nobody"], databaseURL: url)
            #expect(outcome.status == 1)
            #expect(outcome.stderr.contains("the ledger has never seen order order-nobody (in database test_"), "\(outcome.stderr)")
        }
    }

    @Test func historyPrintsAStableTableAndTheResultingOrder() async throws {
        try await TestDatabase.withURL { url, client in
            try await recordHappyOrders(1, on: Ledger(client: client))
            let outcome = try await LedgerBinary.run(["history", "order-0"], databaseURL: url)
            #expect(outcome.status == 0, "\(outcome.stderr)")
            let lines = outcome.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            try #require(lines.count >= 12, "\(outcome.stdout)")
            #expect(lines[0] == "order order-0")
            #expect(lines[2].split(separator: " ", omittingEmptySubsequences: true)
                == ["POSITION", "RECORDED", "AT", "VERSION", "TYPE", "ACTOR", "STATE", "AFTER", "DATA"])
            let types = lines[3...8].map { $0.split(separator: " ", omittingEmptySubsequences: true).dropFirst(3).first ?? "" }
            #expect(types == ["order.created", "payment.queued", "receipt.received", "receipt.verified", "order.granted", "order.finished"])
            #expect(lines[3].contains("amount=4.99 USD"))
            #expect(lines[3].contains("test-suite"))
            #expect(lines[10].hasPrefix("ORDER"))
            #expect(lines[11].hasPrefix("order-0") && lines[11].contains("finished"))
        }
    }

    @Test func historyJSONIsTheAPIsAndAsOfShowsEachPrefix() async throws {
        try await TestDatabase.withURL { url, client in
            let ledger = Ledger(client: client)
            try await recordHappyOrders(1, on: ledger)
            let json = try await LedgerBinary.run(["history", "order-0", "--json"], databaseURL: url)
            let expected = try #require(try await ledger.history("order-0"))
            #expect(json.stdout == expected.json.canonicalJSON + "\n")
            for (index, entry) in expected.entries.enumerated() {
                let asOf = RFC3339.format(entry.event.recordedAt)
                let outcome = try await LedgerBinary.run(["history", "order-0", "--as-of", asOf, "--json"], databaseURL: url)
                let history = try JSONValue(parsing: Array(outcome.stdout.utf8))
                #expect(history["events"]?.elements.count == index + 1)
                #expect(history["order"]?["version"] == .int(Int64(index + 1)))
            }
            let unknown = try await LedgerBinary.run(["history", "nobody"], databaseURL: url)
            #expect(unknown.status == 1 && unknown.stderr.contains("never seen order nobody"))
            let badTime = try await LedgerBinary.run(["history", "order-0", "--as-of", "yesterday"], databaseURL: url)
            #expect(badTime.status == 64 && badTime.stderr.contains("--as-of"))
            // A plain date, as the finance commands take: the whole day (UTC). Today's holds every event; a day long
            // past, none.
            let today = String(RFC3339.format(Date()).prefix(10))
            let wholeDay = try await LedgerBinary.run(["history", "order-0", "--as-of", today, "--json"], databaseURL: url)
            #expect(wholeDay.status == 0, "\(wholeDay.stderr)")
            #expect(try JSONValue(parsing: Array(wholeDay.stdout.utf8))["events"]?.elements.count == expected.entries.count)
            let longAgo = try await LedgerBinary.run(["history", "order-0", "--as-of", "2001-01-01", "--json"], databaseURL: url)
            #expect(!longAgo.stdout.contains("order.created"), "\(longAgo.stdout)\(longAgo.stderr)")
        }
    }

    @Test func anAuditorSavesADigestAndLaterProvesOrDisprovesTheHistory() async throws {
        try await TestDatabase.withURL { url, client in
            try await recordHappyOrders(2, on: Ledger(client: client))
            // Right after recording, before any sealer ran: `ledger digest` seals on demand and covers every event.
            let lastPosition = try await EventStore(client: client).lastPositionInFeedOrder()
            let digest = try await LedgerBinary.run(["digest"], databaseURL: url) { outcome in
                PinnedDigest(outcome.stdout.trimmingCharacters(in: .whitespacesAndNewlines))?.position == lastPosition
            }
            #expect(digest.status == 0, "\(digest.stderr)")
            let pinned = digest.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(PinnedDigest(pinned)?.position == lastPosition, "\(digest.stdout) \(digest.stderr)")

            let passed = try await LedgerBinary.run(["verify", "--digest", pinned], databaseURL: url)
            #expect(passed.status == 0, "\(passed.stdout)")
            #expect(passed.stdout.contains("is unchanged") && passed.stdout.hasSuffix("PASSED\n"))

            try await tamper(client, ["UPDATE events SET data = '{}' WHERE stream_id = 'order-1' AND version = 3"])
            let failed = try await LedgerBinary.run(["verify", "--digest", pinned], databaseURL: url)
            #expect(failed.status == 1, "\(failed.stderr)")
            #expect(failed.stdout.contains("order order-1 version 3"), "\(failed.stderr)")
            #expect(failed.stdout.hasSuffix("FAILED\n"))
        }
    }

    @Test func exportStreamsEveryEventAndRebuildReportsItsRate() async throws {
        try await TestDatabase.withURL { url, client in
            try await recordHappyOrders(3, on: Ledger(client: client))
            let csv = try await LedgerBinary.run(["export", "--format", "csv"], databaseURL: url)
            #expect(csv.stdout.split(separator: "\n").count == 1 + 18)
            let one = try await LedgerBinary.run(["export", "--order", "order-2"], databaseURL: url)
            #expect(one.stdout.split(separator: "\n").count == 6)
            // Periods take a date (UTC; --to includes the whole day) as well as an RFC 3339 time.
            let today = String(RFC3339.format(Date()).prefix(10))
            let day = try await LedgerBinary.run(["export", "--from", today, "--to", today], databaseURL: url)
            #expect(day.status == 0 && day.stdout.split(separator: "\n").count == 18, "\(day.stderr)")
            let before = try await LedgerBinary.run(["export", "--to", "2020-01-01"], databaseURL: url)
            #expect(before.status == 0 && before.stdout.isEmpty, "\(before.stderr)")
            let rebuild = try await LedgerBinary.run(["rebuild"], databaseURL: url)
            #expect(rebuild.status == 0)
            #expect(rebuild.stdout.hasPrefix("rebuilt 3 orders from 18 events"))
            #expect(rebuild.stderr.contains("18/18 events"), "progress on standard error")
        }
    }
}
