import Foundation
import LedgerCore
import LedgerPostgres
import LedgerProviderClients
import LedgerProviders
import Logging

/// Sweeps Apple's notification history for the notifications that never reached the ledger, and records each as
/// if it had been delivered. This is how an App Store order known only by its `appAccountToken` is found: the app
/// died before sending its receipt, so the order has no transaction id to ask Apple about (`Recoverer` cannot), and
/// if Apple's `ONE_TIME_CHARGE` notification failed too, only the history still holds it.
///
/// Steps of one sweep:
/// 1. ask Get Notification History for the window, failures only (`AppStoreServerAPI.notificationHistory`);
/// 2. verify each `signedPayload` (`AppStoreJWSVerifier.verifyNotification`): one that fails is logged as a
///    security event, counted `unverified`, and nothing of it is recorded;
/// 3. record each verified notification exactly as `POST /v1/providers/app-store/notifications` does
///    (`notification.message` → `Ledger.recordProviderMessage`): matched by transaction id, then `appAccountToken`,
///    idempotent by `notificationUUID`, so a notification swept twice, or swept and then delivered by Apple's own
///    retry, is recorded once.
public struct AppStoreNotificationSweep: Sendable {
    let api: AppStoreServerAPI
    let verifier: AppStoreJWSVerifier
    let database: LedgerDatabase
    let clock: @Sendable () -> Date
    let logger: Logger
    let environment: AppStoreServerEnvironment

    /// - Parameters:
    ///   - clock: the time signatures are judged at (a `signedDate` after it is refused) and the history's reach is
    ///     counted from.
    ///   - environment: whose history is swept: Production, or Sandbox for a TestFlight build's ledger.
    public init(
        api: AppStoreServerAPI, verifier: AppStoreJWSVerifier, database: LedgerDatabase,
        clock: @escaping @Sendable () -> Date = Date.init, logger: Logger, environment: AppStoreServerEnvironment = .production
    ) {
        self.api = api
        self.verifier = verifier
        self.database = database
        self.clock = clock
        self.logger = logger
        self.environment = environment
    }

    /// How far back Apple keeps the history (180 days of Production, 30 of Sandbox), less a minute: Apple refuses an
    /// older `startDate` (4000012) instead of answering what it has, so the window is cut to it.
    var reach: TimeInterval { (environment == .production ? 180 : 30) * 86_400 - 60 }

    /// Sweeps the notifications Apple failed to deliver in `[from, to)`. Throws when Apple cannot be asked
    /// (`AppStoreServerAPIError`: nothing was recorded) or the database fails (what was recorded before stays
    /// recorded; sweeping again records the rest).
    public func sweep(from: Date, to: Date) async throws -> SweepReport {
        let now = clock()
        let start = max(from, now.addingTimeInterval(-reach))
        if start > from {
            logger.warning("App Store sweep: Apple keeps \(Int(reach / 86_400) + 1) days of \(environment.rawValue)'s notification history; swept from \(RFC3339.format(start)), not \(RFC3339.format(from))")
        }
        var report = SweepReport()
        guard start < to else { return report }
        let history = try await api.notificationHistory(from: start, to: to, onlyFailures: true, environment: environment)
        report.complete = history.complete
        for signedPayload in history.signedPayloads {
            let notification: AppStoreNotification
            do {
                notification = try await verifier.verifyNotification(signedPayload, now: now)
            } catch {
                report.unverified += 1
                logger.warning("security: a notification in Apple's notification history did not verify; nothing recorded", metadata: [
                    "provider": "app_store", "reason": "\(error)", "environment": "\(environment.rawValue)",
                ])
                continue
            }
            guard let message = notification.message else {
                report.ignored += 1
                continue
            }
            do {
                switch try await database.ledger.recordProviderMessage(message) {
                case .recorded(let orderId, let followed, _):
                    report.recorded += 1
                    logger.info("App Store sweep: recorded a notification Apple failed to deliver", metadata: [
                        "order": "\(orderId)", "notificationUUID": "\(notification.notificationUUID)",
                        "type": "\(notification.notificationType.rawValue)", "followed": "\(followed.map(\.rawValue))",
                    ])
                case .duplicate:
                    report.duplicate += 1
                case .unmatched:
                    report.unmatched += 1
                case .refused:
                    report.refused += 1
                }
            } catch let error as UnkeepableProviderMessage {
                report.refused += 1
                logger.warning("App Store sweep: a notification cannot be kept (\(error.field): \(error.message))", metadata: [
                    "notificationUUID": "\(notification.notificationUUID)",
                ])
            }
        }
        if !history.complete {
            logger.warning("App Store sweep: Apple had more than \(AppStoreServerAPI.maximumPages) pages of failed notifications; sweep a narrower window")
        }
        return report
    }
}

/// What one sweep came to, by notification.
public struct SweepReport: Sendable, Hashable {
    /// Recorded on their order now (`provider.notified` and what follows).
    public var recorded = 0
    /// Already recorded: by an earlier sweep, or delivered by Apple's retry meanwhile.
    public var duplicate = 0
    /// Matching no order: kept for finance (`unknown_provider_transaction`).
    public var unmatched = 0
    /// Signed by Apple with a value the event rules refuse: kept, listed for finance, not applied.
    public var refused = 0
    /// Failed verification: a security event, nothing recorded.
    public var unverified = 0
    /// Verified, and recording nothing by design (`TEST`).
    public var ignored = 0
    /// False when Apple had more pages than one sweep reads (`AppStoreServerAPI.maximumPages`).
    public var complete = true

    public init() {}
}
