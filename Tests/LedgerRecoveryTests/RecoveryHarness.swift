import Foundation
import LedgerCore
@testable import LedgerPostgres
import LedgerProviderClients
import LedgerProviders
import LedgerRecovery
import LedgerTestSupport
import Logging
import ProviderTestSupport
import Synchronization
import _CryptoExtras

/// The schedule's clock, moved by the test: a day of schedule runs in a second.
final class TestClock: Sendable {
    private let current: Mutex<Date>

    init(_ start: Date = Date()) { current = Mutex(start) }

    var now: Date { current.withLock { $0 } }
    func set(_ date: Date) { current.withLock { $0 = date } }
    func advance(_ duration: Duration) { current.withLock { $0 = $0.addingTimeInterval(duration.seconds) } }
    var read: @Sendable () -> Date { { self.now } }
}

/// A fresh database connected as the service role (as `serve` is), a WeChat Pay stand-in, and recoverers on them.
struct RecoveryHarness: Sendable {
    let database: LedgerDatabase
    let wechat: FakeWeChatPayAPI
    let questions: ProviderQuestions
    let clock: TestClock

    static let logger: Logger = {
        var logger = Logger(label: "recovery-tests")
        logger.logLevel = .critical
        return logger
    }()

    /// Runs `body` with the stand-in answering; `platformKey` is the key the ledger trusts for WeChat Pay's answers
    /// (the stand-in signs with `ProviderTestKit.wechatPlatformKey`).
    static func run(
        platformKey: _RSA.Signing.PublicKey = ProviderTestKit.wechatPlatformKey.publicKey,
        _ body: @Sendable @escaping (RecoveryHarness) async throws -> Void
    ) async throws {
        let wechat = try FakeWeChatPayAPI()
        try await TestDatabase.withOwnerAndService { _, service in
            try await wechat.run { base in
                let verifiers = ProviderVerifiers(wechatPay: WeChatPayNotificationVerifier(
                    merchantId: ProviderTestKit.merchantId, apiV3Key: WeChatPayAPIv3Key(ProviderTestKit.apiV3KeyText)!,
                    platformKeys: [ProviderTestKit.platformSerial: platformKey]))
                let clients = ProviderClients(wechatPay: WeChatPayAPI(
                    merchantId: ProviderTestKit.merchantId, serial: wechat.merchantSerial, privateKey: wechat.merchantKey, baseURL: base))
                let questions = ProviderQuestions(clients: clients, verifiers: verifiers, logger: logger)
                try await body(RecoveryHarness(
                    database: LedgerDatabase(client: service), wechat: wechat, questions: questions, clock: TestClock()))
            }
        }
    }

    /// A recoverer: one node of the schedule.
    func node(plan: RecoveryPlan = .standard) -> Recoverer {
        Recoverer(database: database, questions: questions, plan: plan, clock: clock.read, logger: Self.logger)
    }

    /// A WeChat Pay order of 12.34 CNY whose payment is queued, as the app records it before paying.
    func queuedOrder(_ orderId: String) async throws {
        _ = try await database.ledger.record(orderId: orderId, events: [
            Submission(eventId: UUID(), type: "order.created", data: [
                "accountId": "acct-1", "productId": "vip.month", "amount": ["value": 1234, "currency": "CNY"], "provider": "wechat_pay",
            ]),
            Submission(eventId: UUID(), type: "payment.queued", data: [:]),
        ], metadata: EventMetadata(actor: "test-suite"))
    }

    /// The order's state now.
    func state(_ orderId: String) async throws -> OrderState? {
        try await database.ledger.order(orderId)?.state
    }

    /// Where the order stands on the schedule.
    func entry(_ orderId: String) async throws -> RecoveryEntry? {
        try await database.ledger.orderAndRecovery(orderId, attempts: 100)?.recovery
    }

    /// The clock past the queued-payment threshold of every order recorded so far: they may be lost now. Counted from
    /// the wall clock (the events' times are the database's), not from the test clock's start: a busy machine may
    /// take seconds to record them.
    func pastThreshold(_ plan: RecoveryPlan = .standard) {
        clock.set(max(clock.now, Date()).addingTimeInterval((plan.paymentUnansweredAfter + .seconds(1)).seconds))
    }
}
