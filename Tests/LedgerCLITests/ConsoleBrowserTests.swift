import Foundation
import LedgerCore
import LedgerHTTP
@testable import LedgerPostgres
import LedgerTestSupport
import Testing

/// The console in a real browser (headless Chromium), against `ledger serve` on a fresh database holding a realistic
/// set of orders. Screenshots go to `$CONSOLE_SCREENSHOTS` (default: a temporary directory), each path printed.
@Suite("Console: a real browser signs in, finds, reads stories, anomalies, revenue and a reconciliation", .serialized)
struct ConsoleBrowserTests {
    static let screenshots = URL(fileURLWithPath: ProcessInfo.processInfo.environment["CONSOLE_SCREENSHOTS"]
        ?? FileManager.default.temporaryDirectory.appendingPathComponent("orderledger-console-screenshots").path)

    /// The orders of the scenario, recorded through the ledger as services would post them.
    struct Scenario {
        var normal = Lifecycle(), lost = Lifecycle(), refunded = Lifecycle(), switched = Lifecycle(), late = Lifecycle()
        var hostile = Lifecycle(), yen = Lifecycle()
        /// When the normal order had only its first two events: as-of shows it `payment_queued`.
        var normalQueuedAt = Date()

        static let hostileText = "<script>window.__pwned = 1</script><img src=x onerror=\"window.__pwned = 2\">"

        mutating func record(on ledger: Ledger) async throws {
            let metadata = EventMetadata(actor: "checkout-service")
            func post(_ orderId: String, _ events: [Submission]) async throws {
                for event in events { _ = try await ledger.record(orderId: orderId, events: [event], metadata: metadata) }
            }
            normal.accountId = "acct-alice"
            try await post("order-normal", [normal.created])
            let queued = try await ledger.record(orderId: "order-normal", events: [normal.queued], metadata: metadata)
            // The console's as-of is to the millisecond: as of the queued event's recorded time, rounded up to one.
            // A later event's recorded time is the database's clock as the node estimates it, admitted up to a second
            // before the database's own (`RecentStreams`) — once, the receipt was recorded 16 ms before a moment this
            // test had taken after the queued event — so the later events wait until that second has passed too.
            normalQueuedAt = Date(timeIntervalSince1970: (queued.order.updatedAt.timeIntervalSince1970 * 1000).rounded(.up) / 1000)
            let later = normalQueuedAt.addingTimeInterval(TimeInterval(RecentStreams.clockToleranceSeconds) + 0.005)
            while Date() < later { try await Task.sleep(for: .milliseconds(10)) }
            try await post("order-normal", [normal.receipt, normal.verified, normal.granted(), normal.finished])
            lost.accountId = "acct-alice"
            try await post("order-lost", [lost.created, lost.queued, lost.receipt, lost.verified])
            refunded.accountId = "acct-bob"
            try await post("order-refunded", refunded.happyPath + [refunded.refunded])
            switched.accountId = "acct-carol"
            try await post("order-switched", [switched.created, switched.queued, switched.receipt, switched.verified])
            // Another account logged in: the grant to it is refused and kept in the refusal log.
            await #expect(throws: Refusal.self) { try await post("order-switched", [switched.granted(to: "acct-mallory")]) }
            late.accountId = "acct-dave"
            try await post("order-late", [late.created, late.cancelled, late.receipt])
            // One sale in yen beside two in dollars: revenue opens on the currency that sold most, not on JPY for
            // coming first by name.
            yen.accountId = "acct-frank"
            yen.amount = Money(value: 800, currency: "JPY")
            try await post("order-yen", yen.happyPath)
            try await ConsoleBrowserTests.recordSubscriptions(on: ledger, metadata: metadata)
            hostile.accountId = "acct-eve"
            try await post("order-hostile", [hostile.created, hostile.queued, hostile.receipt,
                                             hostile.submission("verification.failed", [
                                                 "code": "21002", "retryable": false, "message": .string(Self.hostileText)])])
        }
    }

    @Test func aRealBrowserWalksTheConsole() async throws {
        try await TestDatabase.withURL { url, client in
            var scenario = Scenario()
            try await ConsoleBrowserTests.addWebhook(on: LedgerDatabase(client: client))
            try await scenario.record(on: Ledger(client: client))
            // The switched order is also a lost order once it waited past lost_order's threshold (10 minutes): its
            // projection's time is moved an hour back, as if recorded then (the events stay untouched).
            try await client.query("UPDATE orders SET updated_at = updated_at - interval '1 hour' WHERE order_id = 'order-switched'")
            let secret = try await TokenStore(client: client).create(name: "auditor", scopes: Scope.allCases)
            let readerOnly = try await TokenStore(client: client).create(name: "support", scopes: [.eventsRead])
            let server = try await RunningServer.start(databaseURL: url)
            defer { server.stop() }
            #expect(server.output.contains("console: http://127.0.0.1:\(server.port)/console/"), "serve prints the console's URL")
            let browser = try await HeadlessBrowser.start()
            do {
                try await walk(browser, server: server, scenario: scenario, secret: secret, readerOnly: readerOnly)
            } catch {
                // What the page said and what the service logged: a failure on a busy CI machine explains itself.
                _ = try? await browser.screenshot("failure", in: Self.screenshots)
                let page = (try? await browser.run("return document.querySelector('main')?.innerText")) ?? .null
                Issue.record("the page said: \(page)\nserve logged:\n\(server.standardError.split(separator: "\n").suffix(20).joined(separator: "\n"))")
                await browser.close()
                throw error
            }
            await browser.close()
        }
    }

    func walk(
        _ browser: HeadlessBrowser, server: RunningServer, scenario: Scenario, secret: String, readerOnly: String
    ) async throws {
        let console = "http://127.0.0.1:\(server.port)/console/"
        // Sign in: the token is asked for, checked at once (a wrong one is said beside the field), kept for the tab.
        try await browser.open(console)
        try await browser.type("olt_" + String(repeating: "x", count: 43), into: "#token")
        try await browser.click("#signin button")
        try await browser.waitUntil("document.getElementById('signin-error')?.textContent.includes('does not know this token')")
        #expect(try await browser.run("return sessionStorage.length") == 0, "a refused token is not kept")
        try await browser.run("document.getElementById('token').value = ''")
        try await browser.type(secret, into: "#token")
        try await browser.click("#signin button")
        try await browser.waitUntil("document.querySelector('main h1')?.textContent === 'Find an order'")
        #expect(try await browser.run("return sessionStorage.length") == 1)
        #expect(try await browser.run("return localStorage.length + document.cookie.length") == 0, "stored nowhere else")

        // Find an order by its id: its story, in order, with the state after each event, every hash verified.
        try await search(browser, "order-normal")
        _ = try await browser.element("#story tbody tr:nth-child(6)")
        #expect(try await browser.text("#order-state") == "finished")
        #expect(try await browser.text("#order-facts").contains("4.99 USD"), "money as money, not 499 USD")
        let types = try await browser.run("return [...document.querySelectorAll('#story tbody tr')].map(r => r.cells[3].textContent)")
        #expect(types == ["order.created", "payment.queued", "receipt.received", "receipt.verified", "order.granted", "order.finished"])
        let states = try await browser.run("return [...document.querySelectorAll('#story tbody tr')].map(r => r.cells[6].textContent)")
        #expect(states == ["created", "payment_queued", "receipt_received", "verified", "granted", "finished"])
        #expect(try await browser.text("#chain-status").contains("verifies"))
        #expect(try await browser.run("return document.querySelectorAll('#story .ok').length") == 6)
        // Times as the CLI prints them, to the millisecond, the zone named: the same on every page.
        let times = try await browser.run("return [...document.querySelectorAll('#story time')].map(t => t.textContent)")
        #expect(times.elements.count >= 6, "\(times)")
        #expect(times.elements.allSatisfy { time in
            guard case .string(let text) = time else { return false }
            return text.range(of: #"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3} UTC$"#, options: .regularExpression) != nil
        }, "\(times)")
        #expect(try await browser.run("return document.getElementById('order-banner')") == .null, "nothing to say, no banner")
        // At a laptop's 1280 px the story fits its box: no column (the hash last) is cut off behind a sideways scroll.
        let storyFits = try await browser.run("""
            const table = document.getElementById('story'), box = table.parentElement;
            return { window: window.innerWidth, table: table.getBoundingClientRect().width, box: box.clientWidth,
                     fits: table.getBoundingClientRect().width <= box.clientWidth + 0.5 && box.scrollWidth <= box.clientWidth };
            """)
        #expect(storyFits["window"] == .int(1280) && storyFits["fits"] == .bool(true), "\(storyFits)")
        #expect(try await browser.run("return document.querySelector('#story tbody tr:last-child code').title.length") == .int(64),
                "the whole hash on hover")
        try await browser.screenshot("order-story", in: Self.screenshots)
        // On a phone's width the page does not scroll sideways: wide tables scroll inside their own box.
        try await expectFitsAPhone(browser, "order-story-phone")

        // As of an earlier moment: the order as it was then.
        let asOf = RFC3339.format(scenario.normalQueuedAt)
        try await browser.run(
            "const input = document.getElementById('asof'); const d = new Date(arguments[0]);"
                + "input.value = new Date(d.getTime() - d.getTimezoneOffset() * 60000).toISOString().slice(0, 23);",
            [.string(asOf)])
        try await browser.click("#asof-form button")
        _ = try await browser.element("#asof-note")
        // Said in full when it fails.
        let shown = try await browser.run("""
            return [location.hash, document.getElementById('asof-note')?.textContent, document.querySelector('#story')?.textContent]
            """)
        #expect(try await browser.text("#order-state") == "payment_queued", "\(shown)")
        #expect(try await browser.run("return document.querySelectorAll('#story tbody tr').length") == 2, "\(shown)")

        // A page whose answers come late is not shown over the one asked for since: the lost order's story with its
        // answers held back a second, and at once the normal order's. Half a second after the held answers are in, the
        // page is still the normal order's.
        _ = try await browser.run("""
            window.fetchNow = window.fetch;
            window.heldAnswers = 0;
            window.fetch = (url, options) => {
                if (!String(url).includes('order-lost')) return window.fetchNow(url, options);
                window.heldAnswers += 1;
                return new Promise((resolve) => setTimeout(resolve, 1000)).then(() => window.fetchNow(url, options))
                    .finally(() => { window.heldAnswers -= 1; window.heldAnsweredAt = Date.now(); });
            };
            location.hash = '#/order/order-lost';
            setTimeout(() => { location.hash = '#/order/order-normal'; }, 20);
            """)
        try await browser.waitUntil("document.getElementById('order-id')?.textContent === 'order-normal' && !document.getElementById('asof-note')")
        try await browser.waitUntil("window.heldAnsweredAt && window.heldAnswers === 0 && Date.now() > window.heldAnsweredAt + 500")
        #expect(try await browser.text("#order-id") == "order-normal", "a late page shown over the one asked for since")
        _ = try await browser.run("window.fetch = window.fetchNow;")

        // By a transaction id: the order it belongs to. By an account id: its orders.
        try await search(browser, scenario.refunded.transactionId)
        try await browser.waitUntil("document.getElementById('order-id')?.textContent === 'order-refunded'")
        #expect(try await browser.text("#order-state") == "refunded")
        try await search(browser, "acct-alice")
        _ = try await browser.element("#orders")
        let orders = try await browser.run("return [...document.querySelectorAll('#orders tbody tr')].map(r => r.cells[0].textContent).sort()")
        #expect(orders == ["order-lost", "order-normal"])
        try await walkSubscriptions(browser)
        try await walkWebhooks(browser)

        // The refused account switch is shown with its order; the late receipt's flag too.
        try await search(browser, "order-switched")
        _ = try await browser.element("#refusals tbody tr")
        #expect(try await browser.text("#refusals").contains("account_mismatch"))
        // At the top of its page, what finance lists about it: a lost order and a refused grant, and the refusal.
        #expect(try await browser.run("return document.querySelector('main h1 + *')?.id") == "order-banner", "under the order's name")
        let anomalyKinds = try await browser.run("return [...document.querySelectorAll('#banner-anomalies .kind')].map(k => k.textContent).sort()")
        #expect(anomalyKinds == ["lost_order", "refused_grant"])
        #expect(try await browser.text("#banner-anomalies").contains("paid (verified), not credited"), "each with its detail")
        #expect(try await browser.run("return document.querySelectorAll('#banner-anomalies time').length") == .int(2), "and since when")
        #expect(try await browser.text("#banner-refusals").contains("account_mismatch order.granted"))
        #expect(try await browser.run("return document.getElementById('banner-scope')") == .null, "finance:read reads anomalies")
        try await expectFitsAPhone(browser, "order-banner-phone")
        try await search(browser, "order-late")
        try await browser.waitUntil("document.getElementById('order-id')?.textContent === 'order-late'")
        #expect(try await browser.text("#order-facts").contains("late_receipt"))
        // This service asks no provider (no --providers-config): the page says so, and offers no question.
        #expect(try await browser.run("return document.getElementById('recover-now')") == .null)
        #expect(try await browser.text("#recovery-unaskable").contains("cannot ask app_store"))

        // Anomalies: the lost order is there, linking to its story.
        try await browser.open(console + "#/anomalies?kind=lost_order&olderThan=0s")
        _ = try await browser.element("#anomalies tbody tr")
        #expect(try await browser.text("#anomalies").contains("order-lost"))
        #expect(!(try await browser.text("main")).contains("null"), "nothing absent is printed as null")
        try await browser.screenshot("anomalies", in: Self.screenshots)
        // Every row the filter lists, as the CSV the download button saves.
        _ = try await browser.element("#anomalies-csv")
        let csv = try await browser.run("return allAnomaliesCSV(new URLSearchParams('kind=lost_order&olderThan=0s'))")
        guard case .string(let csvText) = csv else { Issue.record("no CSV: \(csv)"); return }
        let csvLines = csvText.split(separator: "\r\n")
        #expect(csvLines.first == "kind,order_id,account_id,state,since,age_seconds,detail")
        #expect(csvLines.dropFirst().contains { $0.hasPrefix("\"lost_order\",\"order-lost\"") }, "\(csvText)")
        // A filter the ledger cannot read: said beside its field, the form kept.
        try await browser.open(console + "#/anomalies?olderThan=10%20minutes")
        try await browser.waitUntil("document.getElementById('older-than-error')?.textContent.includes('90s, 10m')")
        #expect(try await browser.run("return document.getElementById('older-than').value") == "10 minutes")
        #expect(try await browser.run("return document.getElementById('problem')") == .null, "the page is not replaced")
        try await browser.open(console + "#/anomalies?kind=lost_order&olderThan=0s")
        _ = try await browser.element("#anomalies tbody tr")
        try await browser.click("#anomalies tbody tr a[href='#/order/order-lost']")
        try await browser.waitUntil("document.getElementById('order-id')?.textContent === 'order-lost'")
        // Several kinds at once: two boxes ticked, rows of both kinds and of no other, the boxes still ticked.
        try await browser.open(console + "#/anomalies?olderThan=0s")
        try await browser.click("#anomaly-kinds input[value=lost_order]")
        try await browser.click("#anomaly-kinds input[value=refused_grant]")
        try await browser.click("#anomalies-form button")
        try await browser.waitUntil("""
            [...document.querySelectorAll('#anomalies tbody tr')].map(r => r.cells[0].textContent)
              .filter((k, i, all) => all.indexOf(k) === i).sort().join() === 'lost_order,refused_grant'
            """)
        #expect(try await browser.run("return location.hash") == "#/anomalies?kind=lost_order%2Crefused_grant&olderThan=0s")
        #expect(try await browser.run("return [...document.querySelectorAll('#anomaly-kinds input:checked')].map(b => b.value)")
            == ["lost_order", "refused_grant"])
        try await browser.screenshot("anomalies-kinds", in: Self.screenshots)
        try await expectFitsAPhone(browser, "anomalies-kinds-phone")

        // Revenue over 30 days with sales on the last: every day on the axis, the empty ones too; a money axis;
        // each day's numbers on hover; net and refunded told apart.
        // Days counted from the scenario's sales, not from now: the walk takes minutes, and one that ran over midnight
        // (UTC) looked for the sales on the next day.
        let sold = scenario.normalQueuedAt
        let days = (0..<30).reversed().map { String(RFC3339.format(sold.addingTimeInterval(-Double($0) * 86_400)).prefix(10)) }
        try await browser.open(console + "#/revenue?from=\(days[0])&to=\(days[29])&timezone=UTC&currency=USD")
        try await browser.waitUntil("document.querySelector('#revenue-chart .day')?.dataset.day === '\(days[0])'")
        #expect(try await browser.run("return [...document.querySelectorAll('#revenue-chart .day')].map(d => d.dataset.day)")
            == .array(days.map(JSONValue.string)))
        #expect(try await browser.run("return document.querySelectorAll('#revenue-chart .day .day-tick').length") == .int(30))
        #expect(try await browser.run("return [...document.querySelectorAll('#revenue-chart .day-label')].map(l => l.textContent)")
            == .array(days.map { .string(String($0.suffix(2))) }), "a label for every day")
        let moneyTicks = try await browser.run("return [...document.querySelectorAll('#revenue-chart .money-tick')].map(t => t.textContent)")
        #expect(moneyTicks.elements.count >= 2 && moneyTicks.elements.contains("0.00 USD"), "\(moneyTicks)")
        #expect(moneyTicks.elements.allSatisfy { tick in
            guard case .string(let text) = tick else { return false }
            return text.range(of: #"^-?\d{1,3}(,\d{3})*\.\d{2} USD$"#, options: .regularExpression) != nil
        }, "money by USD's exponent: \(moneyTicks)")
        let titles = try await browser.run("return [...document.querySelectorAll('#revenue-chart .day')].map(d => d.querySelector(':scope > title')?.textContent ?? '')")
        #expect(titles.elements.count == 30)
        if case .string(let first)? = titles.elements.first { #expect(first.contains("net 0.00 USD"), "\(first)") } else { Issue.record("\(titles)") }
        #expect(try await browser.run("""
            const day = document.querySelector('#revenue-chart .day:last-child');
            const fill = (c) => getComputedStyle(day.querySelector(c)).fill;
            return fill('.net') !== fill('.refunded') && !!document.querySelector('#revenue-chart .legend-net') && !!document.querySelector('#revenue-chart .legend-refunded');
            """) == .bool(true), "net and refunded told apart, with a legend")
        try await browser.screenshot("revenue-30-days", in: Self.screenshots)
        try await expectFitsAPhone(browser, "revenue-30-days-phone")

        // Without a currency asked for, the one that sold most in the period (USD: two sales, JPY one).
        try await browser.open(console + "#/revenue?from=\(days[0])&to=\(days[29])&timezone=UTC")
        try await browser.waitUntil("document.getElementById('revenue-chart') !== null")
        #expect(try await browser.run("return document.getElementById('currency').value") == "USD")
        #expect(try await browser.run("return [...document.getElementById('currency').options].map(o => o.value)") == ["USD", "JPY"])
        // Over two years, no label is printed over another: days and months each in a row of their own, thinned.
        let twoYearsAgo = String(RFC3339.format(sold.addingTimeInterval(-730 * 86_400)).prefix(10))
        try await browser.open(console + "#/revenue?from=\(twoYearsAgo)&to=\(days[29])&timezone=UTC&currency=USD")
        try await browser.waitUntil("document.querySelector('#revenue-chart .day')?.dataset.day === '\(twoYearsAgo)'")
        let labels = try await browser.run("""
            const boxes = (kind) => [...document.querySelectorAll('#revenue-chart .' + kind)].map(t => t.getBBox());
            const overlapping = (list) => list.some((box, i) => i > 0 && box.x < list[i - 1].x + list[i - 1].width + 2);
            return { months: boxes('month-label').length, overlapping: overlapping(boxes('month-label')) || overlapping(boxes('day-label')) };
            """)
        #expect(labels["overlapping"] == .bool(false), "\(labels)")
        if case .int(let months)? = labels["months"] { #expect(months >= 8, "\(labels)") } else { Issue.record("\(labels)") }
        try await browser.screenshot("revenue-2-years", in: Self.screenshots)
        // A period the ledger cannot read is said under the form, which stays as it was typed.
        try await browser.open(console + "#/revenue?from=\(days[29])&to=\(days[0])&timezone=UTC")
        try await browser.waitUntil("document.getElementById('revenue-error')?.textContent.length > 0")
        #expect(try await browser.run("return document.getElementById('from').value") == .string(days[29]))
        #expect(try await browser.run("return document.getElementById('problem')") == .null, "the page is not replaced")

        // Revenue: the page's totals are the API's.
        let today = days[29]
        try await browser.open(console + "#/revenue?from=\(today)&to=\(today)&timezone=UTC&currency=USD")
        try await browser.waitUntil("document.querySelectorAll('#revenue-chart .day').length === 1")
        let report = try await server.get("/v1/reports/revenue?from=\(today)&to=\(today)&groupBy=currency&timezone=UTC", token: secret)
        let usd = report["rows"]?.elements.first { $0["currency"] == "USD" }
        let granted = usd?["granted"]?["amount"], refunded = usd?["refunded"]?["amount"], net = usd?["net"]
        // Money as money, by USD's exponent: the API's minor units over 100.
        func dollars(_ value: JSONValue?) -> String {
            guard case .int(let cents)? = value else { return "?" }
            return Money.formatted(minorUnits: cents, currency: "USD")
        }
        #expect(try await browser.text("#revenue-totals")
            == "Total in USD: granted \(dollars(granted)), refunded \(dollars(refunded)), net \(dollars(net)) USD")
        if case .string(let last)? = titles.elements.last {
            #expect(last.contains("net \(dollars(net)) USD") && last.contains("refunded \(dollars(refunded)) USD"), "\(last)")
        }

        // Reconciliation: a provider file with one transaction the ledger never saw.
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("apple-\(UUID().uuidString).csv")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(("transaction_id,product_id,amount_minor,currency,status,occurred_at\n"
            + "\(scenario.normal.transactionId),gems.100,499,USD,paid,\(today)T10:00:00Z\n"
            + "tx-only-at-apple,gems.100,499,USD,paid,\(today)T10:00:00Z\n"
            + "\(scenario.refunded.transactionId),gems.500,499,USD,refunded,\(today)T10:00:00Z\n").utf8).write(to: file)
        try await browser.open(console + "#/reconcile")
        try await browser.attach(file.path, to: "#provider-file")
        try await browser.run("document.getElementById('rec-from').value = arguments[0]; document.getElementById('rec-to').value = arguments[0];",
                              [.string(today)])
        try await browser.click("#reconcile-form button")
        _ = try await browser.element("#reconciliation-rows")
        let differing = try await browser.text("#reconciliation-rows")
        #expect(differing.contains("tx-only-at-apple") && differing.contains("missing_in_ledger"))
        // A product that differs shows both products, the ledger's and the provider's.
        let mismatch = try await browser.run("""
            return [...document.querySelectorAll('#reconciliation-rows tbody tr')].map(r => r.innerText)
              .find(text => text.includes('product_mismatch')) ?? ''
            """)
        guard case .string(let mismatchRow) = mismatch else { Issue.record("\(mismatch)"); return }
        #expect(mismatchRow.contains("gems.100") && mismatchRow.contains("gems.500"), "\(mismatchRow)")
        #expect(try await browser.text("#reconciliation-summary").contains("matched"))
        #expect(try await !browser.text("main").contains("null"), "no literal null beside the download button")

        // Hostile data is shown as text and never runs.
        try await search(browser, "order-hostile")
        _ = try await browser.element("#story tbody tr:nth-child(4)")
        #expect(try await browser.run("return window.__pwned === undefined") == .bool(true), "injected markup never ran")
        #expect(try await browser.text("#story").contains("<script>window.__pwned = 1</script>"), "shown as text")
        #expect(try await browser.run("return document.querySelectorAll('main script, main img').length") == 0)
        // A hostile id typed in the search box (and so in the page's address) is text too.
        try await search(browser, Scenario.hostileText)
        try await browser.waitUntil("document.querySelector('main h1, #problem')?.textContent.includes('<script>')")
        #expect(try await browser.run("return window.__pwned === undefined") == .bool(true), "an injected id never ran")
        #expect(try await browser.run("return document.querySelectorAll('main script, main img').length") == 0)

        // Digest: a checkpoint and the command that verifies it.
        try await browser.open(console + "#/digest")
        _ = try await browser.element("main h1")
        let digestText = try await browser.text("main")
        #expect(digestText.contains("ledger verify --digest") || digestText.contains("No digest has been sealed yet"))

        // A token without the finance scope: the page says why, in words.
        try await browser.click("#signout")
        try await browser.type(readerOnly, into: "#token")
        try await browser.click("#signin button")
        try await browser.open(console + "#/anomalies")
        try await browser.waitUntil("document.getElementById('problem')?.textContent.includes('finance:read')")
        // Its order pages still show, the banner with the refusals only, saying why the anomalies are not there.
        try await browser.open(console + "#/order/order-switched")
        try await browser.waitUntil("document.getElementById('banner-scope')?.textContent.includes('finance:read')")
        #expect(try await browser.text("#banner-refusals").contains("account_mismatch"))
        #expect(try await browser.run("return document.getElementById('banner-anomalies') || document.getElementById('problem')") == .null)
        _ = try await browser.element("#story tbody tr")
        // A revoked or wrong token: sign in again.
        try await browser.run("sessionStorage.setItem('orderledger.token', 'olt_wrong')")
        try await browser.open(console + "#/order/order-normal")
        try await browser.waitUntil("document.getElementById('problem')?.textContent.includes('Not signed in')")
    }

    /// On a phone's width the page does not scroll sideways: wide tables and the chart scroll inside their own box.
    /// Back to a laptop's width after.
    func expectFitsAPhone(_ browser: HeadlessBrowser, _ screenshot: String) async throws {
        try await browser.resize(width: 390, height: 844)
        let overflowing = try await browser.run("""
            return [...document.querySelectorAll('body *')]
              .filter(e => !e.closest('.scroll') && e.getBoundingClientRect().right > window.innerWidth + 1)
              .map(e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : ''));
            """)
        #expect(overflowing == .array([]), "wider than a phone: \(screenshot)")
        try await browser.screenshot(screenshot, in: Self.screenshots)
        try await browser.resize(width: 1280, height: 1000)
    }

    func search(_ browser: HeadlessBrowser, _ text: String) async throws {
        try await browser.type(text, into: "#q")
        try await browser.click("#search button")
    }
}
