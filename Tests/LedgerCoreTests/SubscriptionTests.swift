import Foundation
import LedgerCore
import LedgerTestSupport
import Testing

@Suite("Subscriptions: signed facts, in any order, make one state and one entitlement")
struct SubscriptionTests {
    @Test func aYearOfRenewalsEntitlesAsTheHandWrittenTableSays() throws {
        let subscription = try #require(SubscriptionYear.fold(SubscriptionYear.notifications))
        for row in SubscriptionYear.table {
            let entitlement = subscription.entitlement(at: row.moment)
            #expect(entitlement.state == row.state, "at \(row.moment)")
            #expect(entitlement.until == row.until, "at \(row.moment)")
            #expect(entitlement.proof?.transactionId == row.proof, "at \(row.moment)")
            #expect(entitlement.isEntitled == (row.state == .active || row.state == .inGrace))
        }
        #expect(subscription.transactions.count == 11)
        #expect(subscription.transactions["t11"]?.revocation?.percentage == 50_000)
        #expect(subscription.renewalInfo?.autoRenew == false)
        #expect(subscription.entitlement(at: SubscriptionYear.day(1, 1) - 1).state == .unknown)
    }

    /// Any delivery order of the same notifications, each possibly delivered more than once, folds to the same
    /// subscription and the same entitlement at every moment.
    @Test func anyDeliveryOrderAndAnyDuplicationEndInTheSameState() throws {
        let inOrder = try #require(SubscriptionYear.fold(SubscriptionYear.notifications))
        for seed in UInt64(1)...200 {
            var random = SplitMix64(state: seed)
            var delivered = SubscriptionYear.notifications
            for event in SubscriptionYear.notifications where random.next() % 3 == 0 { delivered.append(event) }
            delivered.shuffle(using: &random)
            var folded = try #require(SubscriptionYear.fold(delivered))
            folded.version = inOrder.version
            #expect(folded == inOrder, "seed \(seed)")
            for row in SubscriptionYear.table {
                #expect(folded.entitlement(at: row.moment) == inOrder.entitlement(at: row.moment), "seed \(seed)")
            }
        }
    }

    /// Restated by the provider later, a transaction's last statement wins whichever arrived first: a refund, then
    /// its reversal, entitle again in either delivery order.
    @Test func theStatementSignedLastWinsAndARefundReversalEntitlesAgain() throws {
        let start = SubscriptionYear.day(3, 1)
        let bought = SubscriptionYear.transaction("r1", from: start, to: SubscriptionYear.day(4, 1))
        var refunded = bought
        refunded.revocation = Revocation(at: SubscriptionYear.day(3, 5), kind: .refundFull)
        refunded.signedAt = SubscriptionYear.day(3, 5, 1)
        var reversed = bought
        reversed.signedAt = SubscriptionYear.day(3, 9, 1)
        let events = [
            SubscriptionYear.notification("SUBSCRIBED", "INITIAL_BUY", signedAt: bought.signedAt, transaction: bought),
            SubscriptionYear.notification("REFUND", signedAt: refunded.signedAt, transaction: refunded),
            SubscriptionYear.notification("REFUND_REVERSED", signedAt: reversed.signedAt, transaction: reversed),
        ]
        let moment = SubscriptionYear.day(3, 20)
        for order in [[0, 1, 2], [2, 1, 0], [1, 0, 2], [0, 2, 1]] {
            let subscription = try #require(SubscriptionYear.fold(order.map { events[$0] }))
            #expect(subscription.entitlement(at: moment).state == .active, "\(order)")
        }
        let withoutReversal = try #require(SubscriptionYear.fold([events[1], events[0]]))
        #expect(withoutReversal.entitlement(at: moment).state == .refunded)
        #expect(withoutReversal.entitlement(at: SubscriptionYear.day(3, 3)).state == .active)
    }

    /// Billing retry without a grace period does not entitle; a family member's revoked access is `revoked`;
    /// a family-shared period entitles.
    @Test func billingRetryWithoutGraceAndAFamilyRevocationDoNotEntitle() throws {
        let period = SubscriptionYear.transaction("f1", from: SubscriptionYear.day(5, 1), to: SubscriptionYear.day(6, 1), familyShared: true)
        let retry = SubscriptionYear.renewal(retrying: true, signedAt: SubscriptionYear.day(6, 1, 1))
        let retrying = try #require(SubscriptionYear.fold([
            SubscriptionYear.notification("SUBSCRIBED", "INITIAL_BUY", signedAt: period.signedAt, transaction: period),
            SubscriptionYear.notification("DID_FAIL_TO_RENEW", signedAt: retry.signedAt, renewal: retry),
        ]))
        #expect(retrying.entitlement(at: SubscriptionYear.day(5, 20)).state == .active)
        #expect(retrying.entitlement(at: SubscriptionYear.day(6, 3)).state == .billingRetry)
        #expect(!retrying.entitlement(at: SubscriptionYear.day(6, 3)).isEntitled)

        var revoked = period
        revoked.revocation = Revocation(at: SubscriptionYear.day(5, 10), kind: .familyRevoke)
        revoked.signedAt = SubscriptionYear.day(5, 10, 1)
        let gone = try #require(SubscriptionYear.fold([
            SubscriptionYear.notification("REVOKE", signedAt: revoked.signedAt, transaction: revoked),
        ]))
        #expect(gone.entitlement(at: SubscriptionYear.day(5, 12)).state == .revoked)
    }

    /// docs/domain.md, "Subscriptions", table "Transitions", row by row.
    @Test func theDeciderRefusesWhatTheTableRefuses() throws {
        let id = SubscriptionYear.id
        let started = SubscriptionYear.notifications[0]
        #expect(SubscriptionDecider.decide(started, on: nil, stream: id) == nil)
        let subscription = try #require(SubscriptionYear.fold([started]))

        var elsewhere = SubscriptionYear.transaction("x1", from: SubscriptionYear.day(1, 2), to: SubscriptionYear.day(2, 2))
        elsewhere.originalTransactionId = "2000000999"
        #expect(SubscriptionDecider.decide(.provider(.renewed, ProviderSaid(signedAt: elsewhere.signedAt, transaction: elsewhere)), on: subscription, stream: id)
            == .subscriptionMismatch(subscriptionId: id, originalTransactionId: "2000000999"))
        var sandbox = SubscriptionYear.transaction("s1", from: SubscriptionYear.day(2, 1), to: SubscriptionYear.day(3, 1))
        sandbox.environment = .sandbox
        #expect(SubscriptionDecider.decide(.provider(.renewed, ProviderSaid(signedAt: sandbox.signedAt, transaction: sandbox)), on: subscription, stream: id)
            == .environmentMismatch(expected: .production, actual: .sandbox))
        let renewal = SubscriptionYear.notifications[1]
        #expect(SubscriptionDecider.decide(renewal, on: subscription, stream: id, bindings: ["t02": "2000000555"])
            == .transactionBoundElsewhere(transactionId: "t02", subscriptionId: "2000000555"))
        #expect(SubscriptionDecider.decide(renewal, on: subscription, stream: id, bindings: ["t02": id]) == nil)
        let renewalInfoOnly = SubscriptionEvent.provider(
            .autoRenewChanged, ProviderSaid(signedAt: SubscriptionYear.day(1, 3), renewalInfo: SubscriptionYear.renewal(autoRenew: false, signedAt: SubscriptionYear.day(1, 3))))
        #expect(SubscriptionDecider.decide(renewalInfoOnly, on: subscription, stream: id) == nil)

        // Linked: no owner → owned; the owner again → already_linked; another account → account_mismatch.
        let link = SubscriptionEvent.linked(orderId: "order-1", accountId: "alice")
        #expect(SubscriptionDecider.decide(link, on: subscription, stream: id) == nil)
        let owned = Subscription.evolve(subscription, link, stream: id, version: 2, recordedAt: SubscriptionYear.day(1, 1))
        #expect(owned.accountId == "alice" && owned.orderId == "order-1")
        #expect(SubscriptionDecider.decide(link, on: owned, stream: id)?.code == "already_linked")
        #expect(SubscriptionDecider.decide(.linked(orderId: "order-2", accountId: "bob"), on: owned, stream: id)
            == .accountMismatch(owner: "alice", claimant: "bob"))

        // Transferred: only from the owner, to another account, once owned.
        #expect(SubscriptionDecider.decide(.transferred(from: "alice", to: "bob", transaction: nil), on: subscription, stream: id)?.code == "invalid_transition")
        #expect(SubscriptionDecider.decide(.transferred(from: "carol", to: "bob", transaction: nil), on: owned, stream: id)
            == .accountMismatch(owner: "alice", claimant: "carol"))
        #expect(SubscriptionDecider.decide(.transferred(from: "alice", to: "alice", transaction: nil), on: owned, stream: id)?.code == "invalid_transition")
        let transfer = SubscriptionEvent.transferred(from: "alice", to: "bob", transaction: nil)
        #expect(SubscriptionDecider.decide(transfer, on: owned, stream: id) == nil)
        #expect(Subscription.evolve(owned, transfer, stream: id, version: 3, recordedAt: SubscriptionYear.day(1, 1)).accountId == "bob")

        // Claimed: no owner → owned by the claimant, with no order, its transaction merged; the owner again →
        // already_owned; another account → account_mismatch (what the policy makes of it is the store's).
        let shown = SubscriptionYear.transaction("t02", from: SubscriptionYear.day(2, 1), to: SubscriptionYear.day(3, 1))
        let claim = SubscriptionEvent.claimed(accountId: "carol", transaction: shown)
        #expect(SubscriptionDecider.decide(claim, on: subscription, stream: id) == nil)
        let claimed = Subscription.evolve(subscription, claim, stream: id, version: 2, recordedAt: SubscriptionYear.day(2, 1))
        #expect(claimed.accountId == "carol" && claimed.orderId == nil && claimed.transactions["t02"] == shown)
        #expect(SubscriptionDecider.decide(claim, on: claimed, stream: id) == .alreadyOwned(accountId: "carol"))
        #expect(SubscriptionDecider.decide(claim, on: owned, stream: id) == .accountMismatch(owner: "alice", claimant: "carol"))
        let moved = Subscription.evolve(
            owned, .transferred(from: "alice", to: "carol", transaction: shown), stream: id, version: 3, recordedAt: SubscriptionYear.day(2, 1))
        #expect(moved.accountId == "carol" && moved.orderId == "order-1" && moved.transactions["t02"] == shown)

        // Granted: by the owner, once; never while nobody owns it, nor by another account.
        let grant = SubscriptionEvent.granted(accountId: "carol", transaction: shown)
        #expect(SubscriptionDecider.decide(grant, on: subscription, stream: id)?.code == "invalid_transition")
        #expect(SubscriptionDecider.decide(grant, on: owned, stream: id) == .accountMismatch(owner: "alice", claimant: "carol"))
        #expect(SubscriptionDecider.decide(grant, on: claimed, stream: id) == nil)
        let credited = Subscription.evolve(claimed, grant, stream: id, version: 3, recordedAt: SubscriptionYear.day(2, 2))
        #expect(credited.grants == ["t02": SubscriptionYear.day(2, 2)])
        #expect(SubscriptionDecider.decide(grant, on: credited, stream: id) == .alreadyGranted(transactionId: "t02"))
    }

    /// The projection row's facts read back as the subscription they were written from.
    @Test func theFactsOfTheProjectionRowReadBack() throws {
        let first = SubscriptionYear.transaction("t01", from: SubscriptionYear.day(1, 1), to: SubscriptionYear.day(2, 1))
        let subscription = try #require(SubscriptionYear.fold(
            SubscriptionYear.notifications + [.claimed(accountId: "alice", transaction: first), .granted(accountId: "alice", transaction: first)]))
        #expect(subscription.grants.count == 1)
        let read = try Subscription(
            subscriptionId: subscription.subscriptionId, facts: subscription.factsJSON, accountId: subscription.accountId, orderId: subscription.orderId,
            version: subscription.version, updatedAt: subscription.updatedAt)
        #expect(read == subscription)
    }

    /// Every event's stored data parses back to the same event; a refusal names its field.
    @Test func storedDataReadsBackAndBadDataIsRefusedNamingItsField() throws {
        let shown = SubscriptionYear.transaction("t02", from: SubscriptionYear.day(2, 1), to: SubscriptionYear.day(3, 1))
        let events = SubscriptionYear.notifications + [
            .linked(orderId: "order-1", accountId: "alice"), .transferred(from: "alice", to: "bob", transaction: nil),
            .claimed(accountId: "carol", transaction: shown), .transferred(from: "carol", to: "dave", transaction: shown),
            .granted(accountId: "dave", transaction: shown),
        ]
        for event in events {
            #expect(try SubscriptionEvent(type: event.type.rawValue, data: event.data) == event)
            #expect(try SubscriptionEvent(storedType: event.type.rawValue, dataText: Array(event.data.canonicalJSON.utf8)) == event)
        }
        #expect(throws: EventValidationError.invalidField(field: "data.transaction", message: "data.transaction or data.renewalInfo is required")) {
            try SubscriptionEvent(type: "subscription.renewed", data: ["signedAt": "2026-01-01T00:00:00Z"])
        }
        #expect(throws: EventValidationError.unknownEventType("subscription.paused")) {
            try SubscriptionEvent(type: "subscription.paused", data: [:])
        }
        var bad = SubscriptionYear.notifications[0].data
        if case .object(var members) = bad, case .object(var transaction)? = members["transaction"] {
            transaction["expiresAt"] = "next month"
            members["transaction"] = .object(transaction)
            bad = .object(members)
        }
        do {
            _ = try SubscriptionEvent(type: "subscription.started", data: bad)
            Issue.record("a transaction without a time was accepted")
        } catch {
            guard case .invalidField(let field, _) = error else { throw error }
            #expect(field == "data.transaction.expiresAt")
        }
    }

    /// A period's length names its plan (for MRR), and a refund gives back the price or its prorated part, rounded
    /// half up; a family revocation or an upgrade gives nothing back.
    @Test func periodsPerYearAndWhatARefundGaveBack() {
        let start = SubscriptionYear.day(1, 1)
        func period(days: Double) -> SubscriptionTransaction {
            SubscriptionYear.transaction("p", from: start, to: start.addingTimeInterval(days * 86_400))
        }
        #expect([7, 28, 31, 61, 92, 184, 365, 366].map { period(days: $0).periodsPerYear } == [52, 12, 12, 6, 4, 2, 1, 1])
        var refunded = period(days: 31)
        refunded.price = Money(value: 999, currency: "USD")
        #expect(refunded.refunded == nil)
        refunded.revocation = Revocation(at: start, kind: .refundProrated, percentage: 50_000)
        #expect(refunded.refunded == Money(value: 500, currency: "USD"))  // 499.5 → 500
        refunded.revocation = Revocation(at: start, kind: .refundProrated, percentage: 33_333)
        #expect(refunded.refunded == Money(value: 333, currency: "USD"))  // 332.99667 → 333
        refunded.revocation = Revocation(at: start, kind: .refundProrated, percentage: 10_010)
        #expect(refunded.refunded == Money(value: 100, currency: "USD"))  // 99.9999 → 100
        refunded.revocation = Revocation(at: start, kind: .refundFull)
        #expect(refunded.refunded == Money(value: 999, currency: "USD"))
        refunded.price = Money(value: Int64.max, currency: "USD")
        refunded.revocation = Revocation(at: start, kind: .refundProrated, percentage: 100_000)
        #expect(refunded.refunded == Money(value: Int64.max, currency: "USD"))
        refunded.price = Money(value: 999, currency: "USD")
        for kind in [Revocation.Kind.familyRevoke, .upgraded] {
            refunded.revocation = Revocation(at: start, kind: kind)
            #expect(refunded.refunded == nil)
        }
    }

    @Test func eachNotificationTypeRecordsItsEvent() {
        #expect(SubscriptionEventType.of(notificationType: "SUBSCRIBED", subtype: "RESUBSCRIBE") == .started)
        #expect(SubscriptionEventType.of(notificationType: "DID_RENEW", subtype: "BILLING_RECOVERY") == .renewed)
        #expect(SubscriptionEventType.of(notificationType: "EXPIRED", subtype: "VOLUNTARY") == .expired)
        #expect(SubscriptionEventType.of(notificationType: "REFUND", subtype: nil) == .refunded)
        #expect(SubscriptionEventType.of(notificationType: "RENEWAL_EXTENSION", subtype: "SUMMARY") == nil)
        #expect(SubscriptionEventType.of(notificationType: "TEST", subtype: nil) == nil)
        #expect(SubscriptionEventType.allCases.filter { !$0.isProviders } == [.linked, .claimed, .transferred, .granted])
    }
}
