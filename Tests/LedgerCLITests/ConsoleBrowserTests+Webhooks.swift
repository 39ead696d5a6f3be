import Foundation
import LedgerCore
@testable import LedgerPostgres
import Testing

/// The console's webhook pages, walked in the same browser session as the rest (`ConsoleBrowserTests.walk`).
extension ConsoleBrowserTests {
    /// An endpoint on a private address, added before the scenario's events: `serve` (not allowed to send there)
    /// tries each and keeps every refused attempt, which the pages show.
    static func addWebhook(on database: LedgerDatabase) async throws {
        _ = try await database.webhooks.add(
            name: "fulfilment", url: try WebhookEndpointURL("http://10.255.0.1/hooks"),
            selectors: [try #require(WebhookEventSelector("order.*"))])
    }

    /// Each endpoint's health and backlog; one endpoint's recent attempts, with what came of them.
    func walkWebhooks(_ browser: HeadlessBrowser) async throws {
        try await browser.run("location.hash = '#/webhooks'")
        _ = try await browser.element("#webhooks tbody tr")
        let row = try await browser.run("return [...document.querySelector('#webhooks tbody tr').cells].map(c => c.textContent)")
        guard case .array(let cells) = row, cells.count == 7 else { throw ConsoleWalkFailed.missing("the endpoint's row") }
        #expect(cells[0] == "fulfilment" && cells[1] == "active" && cells[2] == "http://10.255.0.1/hooks" && cells[3] == "order.*")
        try await browser.click("#webhooks tbody tr a")
        _ = try await browser.element("#deliveries")
        // serve tries the oldest event of each order at once: the page, shown again until its refused attempts are on it.
        try await browser.waitUntil("""
            [...document.querySelectorAll('#deliveries tbody tr')].some(r => r.textContent.includes('refused_address'))
              || (Date.now() - (window.webhookShown || 0) > 500
                  && (window.webhookShown = Date.now(), window.dispatchEvent(new HashChangeEvent('hashchange'))), false)
            """)
        #expect(try await browser.text("#webhook-health") == "active")
        let outcome = try await browser.run("return [...document.querySelectorAll('#deliveries tbody tr')].map(r => r.cells[6].textContent).find(o => o !== '–')")
        #expect(outcome == "refused_address")
        try await expectFitsAPhone(browser, "webhook-phone")
    }
}
