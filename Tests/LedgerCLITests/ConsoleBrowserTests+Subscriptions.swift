import Foundation
import LedgerCore
@testable import LedgerPostgres
import LedgerTestSupport
import Testing

/// The console's subscription pages, walked in the same browser session as the rest (`ConsoleBrowserTests.walk`).
extension ConsoleBrowserTests {
    static let runningSubscription = "2000000500"

    static func recordSubscriptions(on ledger: Ledger, metadata: EventMetadata) async throws {
        // acct-alice's subscriptions: a year that ended in a refund, and a month running now; each claimed with
        // one of its signed transactions (the year's notifications name no order of this ledger).
        for event in SubscriptionYear.notifications {
            guard case .provider(_, let said) = event, let notificationId = said.notificationId else { continue }
            _ = try await ledger.recordSubscriptionNotification(
                SubscriptionYear.id, event: event, notificationId: notificationId, provider: .appStore, requestId: nil)
        }
        let first = SubscriptionYear.transaction("t01", from: SubscriptionYear.day(1, 1), to: SubscriptionYear.day(2, 1))
        _ = try await ledger.claimSubscription(
            SubscriptionYear.id, accountId: "acct-alice", transaction: first, policy: .keep, metadata: metadata)
        let now = Date()
        let running = SubscriptionTransaction(
            transactionId: Self.runningSubscription, originalTransactionId: Self.runningSubscription, productId: "pro.monthly",
            purchasedAt: now.addingTimeInterval(-86_400), expiresAt: now.addingTimeInterval(29 * 86_400),
            price: Money(value: 499, currency: "USD"), signedAt: now)
        _ = try await ledger.claimSubscription(
            Self.runningSubscription, accountId: "acct-alice", transaction: running, policy: .keep, metadata: metadata)
    }

    /// acct-alice's page (found by the search before this): what it is entitled to, and its subscriptions' pages.
    func walkSubscriptions(_ browser: HeadlessBrowser) async throws {
        // Its entitlements: the month running now, proved by its signed transaction; the year, refunded, beside it.
        let entitled = try await browser.run("return [...document.querySelectorAll('#entitlements tbody tr')].map(r => r.cells[0].textContent + ' ' + r.cells[1].textContent)")
        #expect(entitled == ["pro.monthly active"])
        #expect(try await browser.text("#lapsed").contains("\(SubscriptionYear.id) (refunded)"))
        try await browser.click("#entitlements tbody tr a")
        try await browser.waitUntil("document.getElementById('subscription-id')?.textContent === '\(Self.runningSubscription)'")
        #expect(try await browser.text("#subscription-state") == "active")
        #expect(try await browser.text("#periods").contains("4.99 USD"))
        // A subscription id found by the search box: each period as Apple signed it, money as money, the refund's part.
        try await search(browser, SubscriptionYear.id)
        try await browser.waitUntil("document.getElementById('subscription-id')?.textContent === '\(SubscriptionYear.id)'")
        #expect(try await browser.text("#subscription-state") == "refunded")
        #expect(try await browser.run("return document.querySelectorAll('#periods tbody tr').length") == .int(11))
        let refundedPeriod = try await browser.run("return [...document.querySelectorAll('#periods tbody tr')].map(r => r.textContent).find(t => t.startsWith('t11'))")
        guard case .string(let refundRow) = refundedPeriod else { throw ConsoleWalkFailed.missing("the refunded period") }
        #expect(refundRow.contains("9.99 USD") && refundRow.contains("refund prorated 50 %"), "\(refundRow)")
        #expect(try await browser.text("#subscription-facts").contains("acct-alice"))
        try await expectFitsAPhone(browser, "subscription-phone")
    }
}

enum ConsoleWalkFailed: Error {
    case missing(String)
}
