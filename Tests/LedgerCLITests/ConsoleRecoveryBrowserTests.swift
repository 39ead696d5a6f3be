import Foundation
import LedgerCore
@testable import LedgerPostgres
import LedgerTestSupport
import ProviderTestSupport
import Testing

/// Support's side of recovery, in a real browser: an order's page shows what the ledger asked its provider, and
/// "Ask the provider now" asks (`POST /v1/orders/{id}/recover`), showing the answer and the order it leaves.
@Suite("Console: support asks the provider from an order's page", .serialized)
struct ConsoleRecoveryBrowserTests {
    @Test func supportAsksTheProviderNowAndSeesEachAttempt() async throws {
        let wechat = try FakeWeChatPayAPI()
        wechat.hold(orderId: "wx-1", state: "NOTPAY", transactionId: nil)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("console-recovery-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try await TestDatabase.withURL { url, client in
            _ = try await Ledger(client: client).record(orderId: "wx-1", events: [
                Submission(eventId: UUID(), type: "order.created", data: [
                    "accountId": "acct-1", "productId": "vip.month", "amount": ["value": 1234, "currency": "CNY"], "provider": "wechat_pay",
                ]),
                Submission(eventId: UUID(), type: "payment.queued", data: [:]),
            ], metadata: EventMetadata(actor: "checkout-service"))
            let support = try await TokenStore(client: client).create(name: "support", scopes: [.eventsRead, .ordersRecover])
            let reader = try await TokenStore(client: client).create(name: "reader", scopes: [.eventsRead])
            try await wechat.run { base in
                let providers = try wechat.providersFile(in: directory, base: base)
                // The schedule off: what the page shows is support's doing alone.
                let server = try await RunningServer.start(databaseURL: url, arguments: [
                    // Support asks twice in a row here, as the state changes between: no 10 s rest between people's questions.
                    "--providers-config", providers, "--recovery-interval", "0", "--recovery-person-interval", "0",
                ])
                defer { server.stop() }
                let browser = try await HeadlessBrowser.start()
                do {
                    let console = "http://127.0.0.1:\(server.port)/console/"
                    func signIn(_ token: String) async throws {
                        try await browser.open(console + "#/signin")
                        try await browser.type(token, into: "#token")
                        try await browser.click("#signin button")
                        try await browser.waitUntil("document.querySelector('main h1')?.textContent === 'Find an order'")
                        try await browser.open(console + "#/order/wx-1")
                    }
                    try await signIn(support)
                    try await browser.waitUntil("document.getElementById('recovery-status')?.textContent.includes('Never asked')")

                    try await browser.click("#recover-now")
                    try await browser.waitUntil("document.getElementById('recover-result')?.textContent.startsWith('not_yet')")
                    #expect(try await browser.text("#recover-result").contains("NOTPAY"))
                    #expect(try await browser.text("#recovery-status").hasPrefix("pending"))
                    #expect(try await browser.run("return document.querySelectorAll('#recovery-attempts tbody tr').length") == 1)

                    wechat.hold(orderId: "wx-1", state: "SUCCESS", transactionId: "4200001234202611250000000001")
                    try await browser.click("#recover-now")
                    try await browser.waitUntil("document.getElementById('recover-result')?.textContent.startsWith('recovered')")
                    #expect(try await browser.text("#order-state") == "verified")
                    #expect(try await browser.run("return [...document.querySelectorAll('#recovery-attempts tbody tr')].map(r => r.cells[3].textContent)")
                            == ["recovered", "not_yet"])
                    #expect(try await browser.run("return [...document.querySelectorAll('#story tbody tr')].map(r => r.cells[4].textContent)").elements.contains("provider:wechat_pay"))
                    try await browser.run("document.getElementById('order-facts').scrollIntoView()")
                    try await browser.screenshot("order-recovery", in: ConsoleBrowserTests.screenshots)

                    // A token that may read but not ask is told which scope asking needs.
                    try await signIn(reader)
                    try await browser.waitUntil("document.getElementById('recover-now') !== null")
                    try await browser.click("#recover-now")
                    try await browser.waitUntil("document.getElementById('recover-result')?.textContent.includes('orders:recover')")
                } catch {
                    _ = try? await browser.screenshot("recovery-failure", in: ConsoleBrowserTests.screenshots)
                    let text = (try? await browser.run("return document.querySelector('main')?.innerText")) ?? .null
                    Issue.record("the page said: \(text)\nserve logged:\n\(server.standardError.split(separator: "\n").suffix(20).joined(separator: "\n"))")
                    await browser.close()
                    throw error
                }
                await browser.close()
            }
            #expect(wechat.requests == ["200 wx-1", "200 wx-1"])
        }
    }
}
