import Foundation
import LedgerCore
@testable import LedgerPostgres
import LedgerTestSupport
import Testing

/// Nothing stored changes meaning (issue 43): a ledger written before streams had kinds (schema/021) — the dump in
/// Tests/Fixtures/pre-kinds, written by the build of 9de0198 with scripts/fixtures/pre-kinds.py, with what that build
/// said about it — is migrated by this build, and still proved by the digest saved before, read back the same, and
/// written on.
@Suite("Stream kinds: a ledger written before them keeps its meaning")
struct PreKindsFixtureTests {
    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/pre-kinds")

    static func saved(_ name: String) throws -> String {
        try String(contentsOf: fixture.appendingPathComponent(name), encoding: .utf8)
    }

    static func jsonLines(_ text: String) throws -> [JSONValue] {
        try text.split(separator: "\n").map { try JSONValue(parsing: Array($0.utf8)) }
    }

    @Test func aLedgerWrittenBeforeKindsIsMigratedAndProvedByTheDigestSavedBefore() async throws {
        try await TestDatabase.withDump(Self.fixture.appendingPathComponent("ledger.sql")) { url, client in
            let migrated = try await LedgerBinary.run(["migrate"], databaseURL: url)
            #expect(migrated.status == 0, "\(migrated.stdout)\(migrated.stderr)")
            #expect("\(migrated.stdout)\(migrated.stderr)".contains("021_stream_kinds.sql"))

            let pinned = try Self.saved("digest.txt").trimmingCharacters(in: .whitespacesAndNewlines)
            let verified = try await LedgerBinary.run(["verify", "--digest", pinned], databaseURL: url)
            #expect(verified.status == 0, "\(verified.stdout)\(verified.stderr)")
            #expect(verified.stdout.contains("is unchanged"), "\(verified.stdout)")

            // Every event says what it said, hash and canonical bytes included; each line now also names its
            // stream's kind and id.
            let before = try Self.jsonLines(Self.saved("export.jsonl"))
            let export = try await LedgerBinary.run(["export"], databaseURL: url)
            let after = try Self.jsonLines(export.stdout)
            #expect(after.count == before.count && before.count > 100)
            for (old, new) in zip(before, after) {
                guard case .object(var members) = new else { Issue.record("not an object: \(new)"); continue }
                #expect(members.removeValue(forKey: "kind") == "order")
                #expect(members.removeValue(forKey: "streamId") == old["orderId"])
                #expect(JSONValue.object(members) == old)
            }

            // Every order's history reads back the same.
            guard case .object(let histories) = try JSONValue(parsing: Array(Self.saved("histories.json").utf8)) else {
                Issue.record("histories.json is not an object")
                return
            }
            #expect(histories.count > 30)
            for (orderId, history) in histories {
                let read = try await LedgerBinary.run(["history", orderId, "--json"], databaseURL: url)
                #expect(try JSONValue(parsing: Array(read.stdout.utf8)) == history, "\(orderId): \(read.stderr)")
            }

            // Written on: an order begun before the migration takes its next event, one begun after is created;
            // both chain, the projections agree, and the digest saved before still proves its prefix.
            let ledger = Ledger(client: client)
            var lost = Lifecycle()
            lost.transactionId = "tx-lost-0"
            let metadata = EventMetadata(actor: "test-suite", requestId: nil)
            _ = try await ledger.record(orderId: "lost-0", events: [lost.receipt], metadata: metadata)
            _ = try await recordHappyOrders(2, prefix: "after-kinds", on: ledger)
            let again = try await LedgerBinary.run(["verify", "--digest", pinned], databaseURL: url)
            #expect(again.status == 0, "\(again.stdout)\(again.stderr)")
        }
    }
}
