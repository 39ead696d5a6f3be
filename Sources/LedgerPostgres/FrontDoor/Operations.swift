import Foundation
import LedgerCore
import Logging
import PostgresNIO

/// The operations and audit entry point (`LedgerDatabase.operations`): the ledger digest, verification, rebuilding
/// projections, exporting the log, API tokens, readiness.
public struct Operations: Sendable {
    let pools: EventLoopPools
    let logger: Logger

    /// The pool of the caller's event loop (`EventLoopPools`).
    var client: SessionPool { pools.current }

    // MARK: Readiness

    /// What the database says of itself within `limit`; nil when it does not answer in time. The query runs under
    /// `withConnection(within:)`, like every request's database work: the answer comes at the limit even when the
    /// query never returns (PostgresNIO's queries ignore cancellation, so waiting for a cancelled query, as a task
    /// group does for its children, could wait forever).
    public func readiness(within limit: Duration, logger: Logger) async -> DatabaseReadiness? {
        do {
            return try await client.withConnection(within: limit, .reads) { connection in
                let rows = try await connection.statement(DatabaseReadiness.query, logger: logger)
                for try await (writable, synchronous) in rows.decode((Bool, Bool).self) {
                    return DatabaseReadiness(takesWrites: writable, synchronousReplication: synchronous)
                }
                return nil
            }
        } catch {
            return nil
        }
    }

    // MARK: The ledger digest (`LedgerDigests`)

    /// The latest stored checkpoint; nil before the first seal.
    public func latestDigest() async throws -> DigestCheckpoint? {
        try await digests.latest()
    }

    /// Seals the events recorded since the last checkpoint; `.skip` leaves the round to a sealer already at work.
    @discardableResult
    public func seal(whenAnotherIsSealing: ConcurrentSealing = .wait) async throws -> DigestCheckpoint? {
        try await digests.seal(whenAnotherIsSealing: whenAnotherIsSealing)
    }

    /// A checkpoint covering every event committed before the call (`ledger seal`).
    public func sealNow() async throws -> DigestCheckpoint? {
        try await digests.sealNow()
    }

    /// `sealNow`, or the latest stored checkpoint for a role that may not seal (`ledger digest`).
    public func sealIfPermitted() async throws -> (checkpoint: DigestCheckpoint?, sealed: Bool) {
        try await digests.sealIfPermitted()
    }

    private var digests: LedgerDigests { LedgerDigests(client: client, logger: logger) }

    // MARK: Audit

    /// Hash chains, stored digests, the pinned digest if any, and projections against the fold (`LedgerVerifier`).
    public func verify(pinned: PinnedDigest? = nil) async throws -> VerificationReport {
        let (client, logger) = (self.client, self.logger)
        return try await LedgerVerifier(client: client, logger: logger) {
            async let orders = OrderProjectionCheck(client: client, logger: logger).run()
            async let subscriptions = SubscriptionProjectionCheck(client: client, logger: logger).run()
            let (ordered, subscribed) = try await (orders, subscriptions)
            return ([.order: ordered.streams, .subscription: subscribed.streams], ordered.drift + subscribed.drift)
        }.verify(pinned: pinned)
    }

    /// Every App Store JWS the ledger keeps (notifications, signed transactions), for `verify --signatures`.
    public func forEachStoredAppStoreJWS(_ body: (StoredAppStoreJWS) async throws -> Void) async throws {
        try await StoredSignatures(client: client, logger: logger).forEachAppStoreJWS(body)
    }

    /// Every Alipay and WeChat Pay signed message the ledger keeps (notifications, answers to its queries), for
    /// `verify --signatures`.
    public func forEachStoredProviderMessage(_ body: (StoredProviderMessage) async throws -> Void) async throws {
        try await StoredSignatures(client: client, logger: logger).forEachProviderMessage(body)
    }

    /// Rebuilds every projection from the log and swaps them in: the orders' (`ProjectionRebuild`), then the
    /// subscriptions' (`SubscriptionRebuild`).
    public func rebuild(
        pageSize: Int, progress: (ProjectionRebuild.Progress) async throws -> Void = { _ in }
    ) async throws -> ProjectionRebuild.Result {
        var result = try await ProjectionRebuild(client: client, logger: logger).run(pageSize: pageSize, progress: progress)
        result.subscriptions = try await SubscriptionRebuild(client: client, logger: logger).run()
        return result
    }

    /// Writes the events `export` selects, with their hashes, one record per `write`; returns the count.
    @discardableResult
    public func export(_ export: EventExport, write: (String) throws -> Void) async throws -> Int {
        try await export.run(AuditLog(client: client, logger: logger), write: write)
    }

    // MARK: API tokens (`TokenStore`)

    /// Creates a token; the secret is returned once and stored only as a hash.
    public func createToken(name: String, scopes: [Scope]) async throws -> String {
        try await tokens.create(name: name, scopes: scopes)
    }

    /// True before the first token is created (`serve` then makes a development token on the embedded cluster).
    public func hasNoTokens() async throws -> Bool {
        try await tokens.isEmpty()
    }

    public func listTokens() async throws -> [TokenInfo] {
        try await tokens.list()
    }

    public func revokeToken(name: String) async throws {
        try await tokens.revoke(name: name)
    }

    /// A new secret for the token `name`, same name and scopes; the one it replaces is accepted for `overlap` more.
    public func rotateToken(name: String, overlap: Duration) async throws -> RotatedToken {
        try await tokens.rotate(name: name, overlap: overlap)
    }

    /// `rotateToken`, asked over the API by the bearer of `callerSecret` (`TokenStore.rotate(name:overlap:asCaller:)`).
    public func rotateToken(name: String, overlap: Duration, asCaller callerSecret: String) async throws -> RotatedToken {
        try await tokens.rotate(name: name, overlap: overlap, asCaller: callerSecret)
    }

    /// The tokens as `serve` checks them: cached in memory, a revocation still seen on the next request.
    public func tokenCache() -> TokenCache {
        TokenCache(tokens: tokens)
    }

    var tokens: TokenStore { TokenStore(client: client, logger: logger) }
}

/// The database as `/readyz` reports it.
public struct DatabaseReadiness: Sendable {
    /// A primary out of recovery and not read-only: false on a standby, and on a primary pg_auto_failover keeps
    /// read-only until the old one is known to have stopped (docs/operating.md, "High availability").
    public let takesWrites: Bool
    /// Whether a commit waits for a standby (`synchronous_standby_names` set, `synchronous_commit` at least
    /// `remote_write`): false while the formation runs on one copy, its standby gone.
    public let synchronousReplication: Bool

    static let query: PostgresQuery = """
        SELECT NOT pg_is_in_recovery() AND current_setting('transaction_read_only') = 'off',
               current_setting('synchronous_standby_names') <> ''
                   AND current_setting('synchronous_commit') IN ('on', 'remote_write', 'remote_apply')
        """
}
