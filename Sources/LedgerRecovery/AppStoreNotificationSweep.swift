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
/// 1. ask Get Notification History for the window, failures only, a page at a time
///    (`AppStoreServerAPI.notificationHistoryPage`);
/// 2. verify each `signedPayload` (`AppStoreJWSVerifier.verifyNotification`): one that fails is logged as a
///    security event, counted `unverified`, and nothing of it is recorded;
/// 3. record each verified notification exactly as `POST /v1/providers/app-store/notifications` does
///    (`notification.message` → `Ledger.recordProviderMessage`, and a subscription's event,
///    `Ledger.recordSubscriptionNotification`): matched by transaction id, then `appAccountToken`,
///    idempotent by `notificationUUID`, so a notification swept twice, or swept and then delivered by Apple's own
///    retry, is recorded once;
/// 4. keep the place the next page starts at (`RecoverySchedule.keepSweepPlace`), then ask for it: a window of more
///    pages than one round reads (a multi-day outage) is read on from there by the next round, on any node, each page
///    once. Before, a sweep restarted such a window from its first page every round and never finished it.
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

    /// The environments whose history the ledger sweeps: those the app the Server API key asks about accepts
    /// (`appStore.apps[].environments` of its bundle id), Production first. A ledger that accepts Sandbox purchases
    /// (TestFlight testers, App Review) records Sandbox orders, and those are lost like any other when Apple's
    /// notification fails; one that accepts only Production never has a Sandbox order to find. `Xcode` and
    /// `LocalTesting` have no history at Apple. With no configured app of that bundle id (the verifier would refuse
    /// every notification of it anyway), Production only, as before.
    public static func environments(
        for api: AppStoreServerAPI, verifier: AppStoreJWSVerifier
    ) -> [AppStoreServerEnvironment] {
        guard let app = verifier.apps.first(where: { $0.bundleId == api.bundleId }) else { return [.production] }
        return AppStoreServerEnvironment.allCases.filter { environment in
            app.environments.contains(environment == .production ? .production : .sandbox)
        }
    }

    /// How far back Apple keeps the history (180 days of Production, 30 of Sandbox), less a minute: Apple refuses an
    /// older `startDate` (4000012) instead of answering what it has, so the window is cut to it.
    var reach: TimeInterval { (environment == .production ? 180 : 30) * 86_400 - 60 }

    /// The window a sweep of `[from, to)` asks Apple for: cut to what Apple still keeps (it refuses an older
    /// `startDate`, 4000012, instead of answering what it has). Nil when nothing of it is left to ask. Cut once, when
    /// the window begins: Apple ties its page tokens to the exact request, so every page of it is asked alike.
    public func window(from: Date, to: Date) -> RecoverySweepClaim.Place? {
        let start = max(from, clock().addingTimeInterval(-reach))
        if start > from {
            logger.warning("App Store sweep: Apple keeps \(Int(reach / 86_400) + 1) days of \(environment.rawValue)'s notification history; swept from \(RFC3339.format(start)), not \(RFC3339.format(from))")
        }
        guard start < to else { return nil }
        return RecoverySweepClaim.Place(windowStart: start, windowEnd: to, nextPageToken: nil)
    }

    /// Whether Apple still keeps the start of a window begun earlier (one left half-read for longer than Apple keeps
    /// its history is begun again).
    public func stillKept(_ place: RecoverySweepClaim.Place) -> Bool {
        place.windowStart >= clock().addingTimeInterval(-reach)
    }

    /// Sweeps the notifications Apple failed to deliver in `[from, to)`, at most `AppStoreServerAPI.maximumPages`
    /// pages, keeping its place nowhere (`report.place` says where it stopped). Throws when Apple cannot be asked
    /// (`AppStoreServerAPIError`) or the database fails (what was recorded before stays recorded; sweeping again
    /// records the rest).
    public func sweep(from: Date, to: Date) async throws -> SweepReport {
        guard let window = window(from: from, to: to) else { return SweepReport() }
        return try await sweep(window)
    }

    /// Reads the window at `place` from its next page, at most `pages` pages, recording each page's notifications
    /// before asking for the next. After each page, `keep` is given the place the next page starts at (nil: the
    /// window is read to its end) and answers whether to go on (false: the sweep's lease was lost). The report's
    /// `place` is where the next sweep goes on (nil when the window was read to its end), so a window of any number
    /// of pages is read, each page once, over as many rounds as it takes.
    public func sweep(
        _ place: RecoverySweepClaim.Place, pages: Int = AppStoreServerAPI.maximumPages,
        keep: (RecoverySweepClaim.Place?) async throws -> Bool = { _ in true }
    ) async throws -> SweepReport {
        let now = clock()
        var report = SweepReport()
        report.place = place
        for _ in 0..<max(pages, 1) {
            guard let current = report.place else { break }
            let page = try await api.notificationHistoryPage(
                from: current.windowStart, to: current.windowEnd, onlyFailures: true, environment: environment,
                paginationToken: current.nextPageToken)
            report.pages += 1
            for signedPayload in page.signedPayloads {
                try await record(signedPayload, now: now, into: &report)
            }
            report.place = page.paginationToken.map {
                RecoverySweepClaim.Place(windowStart: current.windowStart, windowEnd: current.windowEnd, nextPageToken: $0)
            }
            guard try await keep(report.place) else { break }
        }
        report.complete = report.place == nil
        if !report.complete {
            logger.info("App Store sweep: \(report.pages) page(s) of \(environment.rawValue)'s failed notifications read; the next round goes on from the next page")
        }
        return report
    }

    /// Verifies one notification of the history and records it as a delivered one would be.
    private func record(_ signedPayload: String, now: Date, into report: inout SweepReport) async throws {
        let notification: AppStoreNotification
        do {
            notification = try await verifier.verifyNotification(signedPayload, now: now)
        } catch {
            report.unverified += 1
            logger.warning("security: a notification in Apple's notification history did not verify; nothing recorded", metadata: [
                "provider": "app_store", "reason": "\(error)", "environment": "\(environment.rawValue)",
            ])
            return
        }
        guard let message = notification.message else {
            report.ignored += 1
            return
        }
        // An auto-renewable subscription's notification is also its subscription's event, as when Apple delivers it
        // (`POST /v1/providers/app-store/notifications`): a swept `DID_RENEW` is the renewal the ledger missed.
        if let about = notification.subscriptionEvent {
            _ = try await database.ledger.recordSubscriptionNotification(
                about.subscriptionId, event: about.event, notificationId: notification.notificationUUID, provider: .appStore,
                requestId: nil)
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
    /// False when the window was not read to its end (`AppStoreServerAPI.maximumPages` pages were read, or the
    /// lease was lost): `place` says where the next sweep goes on.
    public var complete = true
    /// Pages asked of Apple.
    public var pages = 0
    /// Where the next sweep of this window goes on; nil once it was read to its end.
    public var place: RecoverySweepClaim.Place?

    public init() {}
}
