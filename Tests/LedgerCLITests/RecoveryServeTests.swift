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

extension Array {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var mapped: [T] = []
        for element in self { mapped.append(try await transform(element)) }
        return mapped
    }
}
