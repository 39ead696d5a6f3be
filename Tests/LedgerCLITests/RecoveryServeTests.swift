import Foundation
import LedgerCore
@testable import LedgerPostgres
import LedgerTestSupport
import ProviderTestSupport
import Testing

@Suite("CLI: serve recovers lost orders by itself")
struct RecoveryServeTests {
    /// As an operator runs it: two `serve` nodes on one database, each with the recovery schedule on. Orders whose
    /// payment was queued and never heard of are asked about WeChat Pay by one node each — never by both — and its
    /// signed "paid" verifies them; the counters say so; `ledger verify` passes.
    @Test func twoServeNodesRecoverQueuedPaymentsAskingAboutEachOrderOnce() async throws {
        let wechat = try FakeWeChatPayAPI()
        wechat.answerAfter(.milliseconds(200))
        let orders = (1...6).map { "wx-\($0)" }
        for (index, orderId) in orders.enumerated() {
            wechat.hold(orderId: orderId, state: "SUCCESS", transactionId: "42000012342026112500000000\(10 + index)")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("recovery-serve-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try await TestDatabase.withURL { url, client in
            let ledger = Ledger(client: client)
            for orderId in orders {
                _ = try await ledger.record(orderId: orderId, events: [
                    Submission(eventId: UUID(), type: "order.created", data: [
                        "accountId": "acct-1", "productId": "vip.month", "amount": ["value": 1234, "currency": "CNY"], "provider": "wechat_pay",
                    ]),
                    Submission(eventId: UUID(), type: "payment.queued", data: [:]),
                ], metadata: EventMetadata(actor: "test-suite"))
            }
            try await wechat.run { base in
                let providers = try wechat.providersFile(in: directory, base: base)
                let arguments = ["--providers-config", providers, "--recovery-interval", "1", "--recovery-payment-after", "0"]
                let nodes = [
                    try await RunningServer.start(databaseURL: url, arguments: arguments),
                    try await RunningServer.start(databaseURL: url, arguments: arguments),
                ]
                defer { nodes.forEach { $0.stop() } }
                #expect(nodes[0].standardError.contains("recovery: asking wechat_pay about orders that may be lost, every 1 s"), "\(nodes[0].standardError)")
                let deadline = ContinuousClock.now + .seconds(60)
                while ContinuousClock.now < deadline {
                    var states: [OrderState?] = []
                    for orderId in orders { states.append(try await ledger.order(orderId)?.state) }
                    if states.allSatisfy({ $0 == .verified }) { break }
                    try await Task.sleep(for: .milliseconds(100))  // polling the outcome, not waiting in its place
                }
                for orderId in orders {
                    #expect(try await ledger.order(orderId)?.state == .verified, "\(orderId): \(nodes[0].output)\(nodes[1].output)")
                }
                let metrics = try await nodes.asyncMap { try await $0.text("/metrics") }.joined()
                #expect(metrics.contains("ledger_recovery_attempts_total{provider=\"wechat_pay\",outcome=\"recovered\"}"), "\(metrics)")
            }
            #expect(wechat.requests.sorted() == orders.map { "200 \($0)" }.sorted(), "each order asked once: \(wechat.requests)")
            let verify = try await LedgerBinary.run(["verify"], databaseURL: url)
            #expect(verify.status == 0, "\(verify.stdout)")
        }
    }
}

extension RecoveryServeTests {
    /// A `serve` node killed (`kill -9`) while it waits for WeChat Pay's answer about an order: the order is not lost.
    /// Its lease runs out (`--recovery-lease 3`), another node asks, and the provider's answer is recorded once.
    @Test func anOrderANodeWasAskingAboutWhenKilledIsAskedByAnotherOnceItsLeaseEnds() async throws {
        let wechat = try FakeWeChatPayAPI()
        wechat.hold(orderId: "wx-1", state: "SUCCESS", transactionId: "4200001234202611250000000091")
        wechat.answerAfter(.seconds(8))
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("recovery-kill-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try await TestDatabase.withURL { url, client in
            let ledger = Ledger(client: client)
            _ = try await ledger.record(orderId: "wx-1", events: [
                Submission(eventId: UUID(), type: "order.created", data: [
                    "accountId": "acct-1", "productId": "vip.month", "amount": ["value": 1234, "currency": "CNY"], "provider": "wechat_pay",
                ]),
                Submission(eventId: UUID(), type: "payment.queued", data: [:]),
            ], metadata: EventMetadata(actor: "test-suite"))
            try await wechat.run { base in
                let arguments = ["--providers-config", try wechat.providersFile(in: directory, base: base), "--recovery-interval", "1",
                                 "--recovery-payment-after", "0", "--recovery-lease", "3", "--seal-interval", "0"]
                let first = try await RunningServer.start(databaseURL: url, arguments: arguments)
                let asking = ContinuousClock.now + .seconds(60)
                while wechat.inFlight == 0, ContinuousClock.now < asking {
                    try await Task.sleep(for: .milliseconds(50))  // polling for the question, not waiting in its place
                }
                #expect(wechat.inFlight == 1, "the first node never asked: \(first.output)")
                first.killAbruptly()
                first.stop()
                wechat.answerAfter(.zero)
                let second = try await RunningServer.start(databaseURL: url, arguments: arguments)
                defer { second.stop() }
                let deadline = ContinuousClock.now + .seconds(60)
                while try await ledger.order("wx-1")?.state != .verified, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(100))
                }
                #expect(try await ledger.order("wx-1")?.state == .verified, "\(second.output)")
                let facts = try await ledger.history("wx-1")?.entries.filter { $0.event.type == "provider.notified" }
                #expect(facts?.count == 1, "recorded once")
            }
        }
    }
}

extension Array {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var mapped: [T] = []
        for element in self { mapped.append(try await transform(element)) }
        return mapped
    }
}
