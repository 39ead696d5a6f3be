import Foundation
import LedgerCore
import LedgerTestSupport
import Testing

/// docs/domain.md's subscription transitions, read from the document itself: the refusals each row names are exactly
/// those the decider gives for that event, over every combination of owner, claimant and transaction tried here.
@Suite("Subscriptions: the decider refuses what docs/domain.md's table says, and nothing else")
struct SubscriptionTableTests {
    static let domain = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("docs/domain.md")

    /// The table "Transitions" under "# Subscriptions": each row's event (its first column) and the codes its last
    /// column names (backticked snake-case words: not event types, field names or the policies' names).
    static func documentedRefusals() throws -> [String: Set<String>] {
        let text = try String(contentsOf: domain, encoding: .utf8)
        guard let section = text.range(of: "\n# Subscriptions"),
              let transitions = text.range(of: "\n## Transitions", range: section.upperBound..<text.endIndex)
        else { return [:] }
        var rows: [String: Set<String>] = [:]
        for line in text[transitions.upperBound...].split(separator: "\n") {
            if line.hasPrefix("## ") { break }
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count == 6, cells[1] != "event", !cells[1].hasPrefix("---") else { continue }
            let codes = cells[4].split(separator: "`", omittingEmptySubsequences: false).enumerated().compactMap {
                index, part -> String? in
                index % 2 == 1 && part.contains("_") && part.allSatisfy({ $0.isLowercase || $0 == "_" }) ? String(part) : nil
            }
            rows[cells[1].replacingOccurrences(of: "`", with: "")] = Set(codes)
        }
        return rows
    }

    /// Every refusal the decider gives, by the table's row of its event.
    static func decidedRefusals() throws -> [String: Set<String>] {
        let id = SubscriptionYear.id
        let unowned = try #require(SubscriptionYear.fold([SubscriptionYear.notifications[0]]))
        let owned = Subscription.evolve(
            unowned, .linked(orderId: "order-1", accountId: "alice"), stream: id, version: 2, recordedAt: SubscriptionYear.day(1, 1))
        let good = SubscriptionYear.transaction("t50", from: SubscriptionYear.day(2, 1), to: SubscriptionYear.day(3, 1))
        let granted = Subscription.evolve(
            owned, .granted(accountId: "alice", transaction: good), stream: id, version: 3, recordedAt: SubscriptionYear.day(2, 1))
        var another = good
        another.originalTransactionId = "2000000999"
        var sandbox = good
        sandbox.environment = .sandbox
        let transactions = [good, another, sandbox]
        let bindings: [[String: String]] = [[:], ["t50": "2000000555"]]
        let accounts = ["alice", "bob"]

        var events: [(row: String, event: SubscriptionEvent)] = []
        for transaction in transactions {
            events.append(("any of the provider's", .provider(.renewed, ProviderSaid(signedAt: transaction.signedAt, transaction: transaction))))
            for account in accounts {
                events.append(("subscription.claimed", .claimed(accountId: account, transaction: transaction)))
                events.append(("subscription.granted", .granted(accountId: account, transaction: transaction)))
                for to in accounts {
                    events.append(("subscription.transferred", .transferred(from: account, to: to, transaction: transaction)))
                }
            }
        }
        for account in accounts {
            events.append(("subscription.linked", .linked(orderId: "order-2", accountId: account)))
            for to in accounts { events.append(("subscription.transferred", .transferred(from: account, to: to, transaction: nil))) }
        }
        var refusals: [String: Set<String>] = [:]
        for (row, event) in events {
            for subscription in [nil, unowned, owned, granted] {
                for bound in bindings {
                    let refusal = SubscriptionDecider.decide(event, on: subscription, stream: id, bindings: bound)
                    refusals[row, default: []].formUnion(refusal.map { [$0.code] } ?? [])
                }
            }
        }
        return refusals
    }

    @Test func eachRowNamesTheRefusalsTheDeciderGives() throws {
        let documented = try Self.documentedRefusals()
        #expect(documented.count == 5, "rows: \(documented.keys.sorted())")
        let decided = try Self.decidedRefusals()
        #expect(documented == decided, "documented \(documented), decided \(decided)")
    }
}
