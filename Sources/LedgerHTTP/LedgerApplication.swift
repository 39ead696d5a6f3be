import Foundation
import Hummingbird
import HummingbirdCore
import LedgerCore
import LedgerPostgres
import LedgerProviders
import LedgerRecovery
import Logging
import NIOCore

/// Assembles the HTTP API: every route, its scope, and the middleware around it.
public enum LedgerApplication {
    /// The router alone: what tests drive and what `serve` runs.
    /// `providers` enables the providers' notification endpoints and signed-transaction receipts (none by default).
    /// `replicas` serve the reads that may lag (`ReadSource`); none: every read is the primary's.
    /// `recoverer` asks providers about an order on support's request (`POST /v1/orders/{id}/recover`); none: 501.
    /// `subscriptionTransfers`: what a claim of a subscription by another account than its owner does (`keep`).
    /// `readinessTimeout`: how long `/readyz` waits for the database (2 s; a test on a busy machine waits longer).
    public static func router(
        database: LedgerDatabase, metrics: LedgerMetrics = .shared, providers: ProviderVerifiers = ProviderVerifiers(),
        replicas: ReadReplicas? = nil, recoverer: Recoverer? = nil,
        subscriptionTransfers: SubscriptionTransferPolicy = .keep, readinessTimeout: Duration = defaultReadinessTimeout
    ) -> Router<LedgerRequestContext> {
        routerAndLane(
            database: database, metrics: metrics, providers: providers, replicas: replicas, recoverer: recoverer,
            subscriptionTransfers: subscriptionTransfers, readinessTimeout: readinessTimeout
        ).router
    }

    /// The router, and the `HistoryLane` that shares its token cache and rendered history pages: none with
    /// `replicas` (which server reads is the router's to choose). `serverName`: the `Server` header the lane sends,
    /// the application's.
    public static func routerAndLane(
        database: LedgerDatabase, metrics: LedgerMetrics = .shared, providers: ProviderVerifiers = ProviderVerifiers(),
        replicas: ReadReplicas? = nil, recoverer: Recoverer? = nil,
        subscriptionTransfers: SubscriptionTransferPolicy = .keep, readinessTimeout: Duration = defaultReadinessTimeout,
        serverName: String? = LedgerApplication.serverName
    ) -> (router: Router<LedgerRequestContext>, lane: HistoryLane?) {
        let ledger = database.ledger
        // HEAD answers as GET does, without the body (RFC 9110 §9.3.2): a monitor's HEAD /healthz was a 404.
        let router = Router(context: LedgerRequestContext.self, options: .autoGenerateHeadEndpoints)
        // Outermost first: the request log sees the final status, metrics too, errors become JSON answers inside.
        router.add(middleware: RequestLogMiddleware())
        router.add(middleware: RequestMetricsMiddleware())
        router.add(middleware: ErrorMiddleware())
        router.add(middleware: RequestDeadlineMiddleware())
        router.add(middleware: StreamSafeRequestMiddleware())

        OperationalRoutes(
            operations: database.operations, metrics: metrics, replicas: replicas, readinessTimeout: readinessTimeout)
            .register(on: router)
        ConsoleRoutes().register(on: router)
        let tokens = database.operations.tokenCache()
        let histories = RenderedHistories()
        let writers = router.group("v1").add(middleware: RequireScope(scope: .eventsWrite, tokens: tokens))
        let readers = router.group("v1").add(middleware: RequireScope(scope: .eventsRead, tokens: tokens))
        ProviderRoutes(ledger: ledger, verifiers: providers).register(on: router)
        let reads = ReadSource(primary: ledger, replicas: replicas)
        OrderRoutes(
            ledger: ledger, reads: reads, metrics: metrics, histories: histories,
            appStore: providers.appStore, askableProviders: recoverer?.providers ?? [])
            .register(writers: writers, readers: readers)
        ReadRoutes(ledger: ledger, operations: database.operations, reads: reads).register(readers: readers)
        EvidenceRoutes(reads: reads).register(readers: readers)
        SubscriptionRoutes(
            ledger: ledger, recovery: database.recovery, appStore: providers.appStore, transfers: subscriptionTransfers)
            .register(writers: writers, readers: readers)
        let finance = router.group("v1").add(middleware: RequireScope(scope: .financeRead, tokens: tokens))
        FinanceRoutes(finance: database.finance).register(finance: finance)
        let admins = router.group("v1").add(middleware: RequireScope(scope: .tokensAdmin, tokens: tokens))
        TokenRoutes(operations: database.operations).register(admins: admins)
        let recoverers = router.group("v1").add(middleware: RequireScope(scope: .ordersRecover, tokens: tokens))
        RecoveryRoutes(recoverer: recoverer).register(recoverers: recoverers)
        let managers = router.group("v1").add(middleware: RequireScope(scope: .webhooksManage, tokens: tokens))
        WebhookRoutes(webhooks: database.webhooks).register(managers: managers)
        let lane = replicas == nil
            ? HistoryLane(ledger: ledger, tokens: tokens, histories: histories, serverName: serverName) : nil
        return (router, lane)
    }

    /// The `Server` header of every answer.
    public static let serverName = "OrderLedger"

    /// HTTP/1.1, where a connection ends after a response when the request or the response says so, a request the
    /// parser cannot read still gets the API's JSON error, a connection that sends
    /// no complete request part for `idleTimeout` is closed (an idle keep-alive, or one that trickles a header a byte at
    /// a time: each held a file descriptor for good), and a body must arrive within `bodyTimeout`. `lane`: the history
    /// reads answered before the router (`HistoryLane`), from `routerAndLane`.
    public static func server(
        idleTimeout: Duration? = defaultIdleTimeout, bodyTimeout: Duration = defaultBodyTimeout, lane: HistoryLane? = nil
    ) -> HTTPServerBuilder {
        // The idle timeout is `ConnectionIdleState`'s, which replaces Hummingbird's handler of it.
        let configuration = HTTP1Channel.Configuration(
            additionalChannelHandlers: [
                ConnectionPersistence.Installer(), UnreadableRequestResponder(), RequestBodyDeadline(timeout: bodyTimeout),
            ],
            idleTimeout: nil)
        return HTTPServerBuilder { responder in
            ConnectionsOnTheirLoops(
                connection: HTTP1Channel(responder: responder, configuration: configuration),
                idleTimeout: idleTimeout.map(TimeAmount.init), lane: lane)
        }
    }

    /// `serve --idle-timeout`'s default.
    public static let defaultIdleTimeout: Duration = .seconds(30)
    /// `serve --body-timeout`'s default.
    public static let defaultBodyTimeout: Duration = .seconds(30)
    /// How long `/readyz` waits for the database by default: a monitor's probe is answered well within its own timeout.
    public static let defaultReadinessTimeout: Duration = .seconds(2)

    /// The HTTP application `serve` runs. Its database clients are not among its services: `serve` runs them in its
    /// own service group, where they stop after the server and the background loops that use them (`ServeServices`).
    public static func make(
        database: LedgerDatabase, host: String, port: Int, logger: Logger, providers: ProviderVerifiers = ProviderVerifiers(),
        replicas: ReadReplicas? = nil, recoverer: Recoverer? = nil,
        subscriptionTransfers: SubscriptionTransferPolicy = .keep, idleTimeout: Duration? = defaultIdleTimeout,
        bodyTimeout: Duration = defaultBodyTimeout, onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) -> some ApplicationProtocol {
        let (router, lane) = routerAndLane(
            database: database, providers: providers, replicas: replicas, recoverer: recoverer,
            subscriptionTransfers: subscriptionTransfers)
        return Application(
            router: router,
            server: server(idleTimeout: idleTimeout, bodyTimeout: bodyTimeout, lane: lane),
            configuration: .init(address: .hostname(host, port: port), serverName: serverName),
            onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? port) },
            logger: logger)
    }
}
