import Foundation
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// The ledger's pool of PostgreSQL sessions: at most `configuration.options.maximumConnections`, opened when a lease
/// finds none idle, kept open while they work, and never pinged or timed: a lease and a release each take one lock and
/// start nothing. PostgreSQL's own TCP keep-alives (`Database.serverKeepAlive`) keep an idle session's path open.
///
/// Why not PostgresNIO's `PostgresClient`: its pool (1.33) traps on a precondition when, after PostgreSQL restarted
/// under load, it holds fewer sessions than its minimum and a lease finds none idle — it drops, without replacing, the
/// sessions that failed while it retried one — and without a minimum it starts a timer on every release (a third of a
/// history read's CPU, and a libdispatch crash in CI). It also queued every lease while retrying a failed connection,
/// idle sessions or not. This pool keeps no minimum, so it has nothing to trap on after an outage.
///
/// When PostgreSQL refuses a new session, the pool tries again (after 100 ms, a quarter longer each time, at most 5 s)
/// while leases wait, which are also served by the pool's other sessions as they come back. With no session in use it
/// fails the waiting leases with PostgreSQL's reason once it has tried for `givingUpAfter` (a minute, as PostgresNIO's
/// pool did; in `serve` a request's own deadline, `withConnection(within:)`, ends its wait first: the API answers 503).
/// A session PostgreSQL dropped is forgotten when it comes back to the pool or is found idle; a session a deadline
/// closed mid-query is forgotten at once (`forget`), so a query stuck on it costs the pool no slot.
final class SessionPool: Service, Sendable {
    let configuration: PostgresClient.Configuration
    /// The servers to choose among (`DatabaseServers`); nil: `configuration`'s one server.
    let servers: DatabaseServers?
    private let maximum: Int
    /// How long the pool keeps trying to open a session while it has none in use, before it fails the waiting leases.
    private let givingUpAfter: TimeAmount
    private let eventLoops: any EventLoopGroup
    private let logger: Logger
    private let state: Mutex<State>
    /// The work its requests do together (`StatementGroup`): the appends from memory, the stream versions.
    let groups = StatementGroups()

    /// Sessions connect on `eventLoopGroup`'s loops (`serve` gives each pool a loop of its own, `EventLoopPools`).
    /// TLS is not negotiated (`Database.configuration(fromURL:)`): the database is on loopback or a private network.
    init(
        configuration: PostgresClient.Configuration, servers: DatabaseServers? = nil,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        backgroundLogger: Logger = Logger(label: "ledger.db"), givingUpAfter: Duration = .seconds(60)
    ) {
        self.configuration = configuration
        self.servers = servers
        self.maximum = max(1, configuration.options.maximumConnections)
        self.state = Mutex(State(maximum: maximum))
        self.givingUpAfter = TimeAmount(givingUpAfter)
        self.eventLoops = eventLoopGroup
        self.logger = backgroundLogger
    }

    /// Runs `body` with a session of the pool, and gives it back after. Unless `use` is `.reads`, `body`'s result is
    /// returned only once PostgreSQL has committed what it wrote (`PostgresConnection.confirmCommitted`).
    func withConnection<T>(_ use: SessionUse = .writes, _ body: (PostgresConnection) async throws -> T) async throws -> T {
        let connection = try await lease(use)
        defer { release(connection) }
        return try await run(use, on: connection, body)
    }

    /// `body` on a leased session (`PostgresConnection.run`). A write refused because the server does not take writes
    /// (SQLSTATE 25006: a standby, or a primary being demoted at a switchover) closes the session: the pool opens the
    /// next one on the server that does (`DatabaseServers`).
    func run<T>(_ use: SessionUse, on connection: PostgresConnection, _ body: (PostgresConnection) async throws -> T) async throws -> T {
        do {
            return try await connection.run(use, body)
        } catch {
            closeIfNotWritable(connection, error)
            throw error
        }
    }

    /// `withConnection`, inside a transaction: committed when `body` returns, rolled back when it throws. A `COMMIT`
    /// that fails is `CommitUnconfirmed` (`PostgresConnection.transaction`).
    func withTransaction<T>(logger: Logger, _ body: (PostgresConnection) async throws -> sending T) async throws -> sending T {
        let connection = try await lease()
        defer { release(connection) }
        do {
            return try await connection.transaction(logger: logger, body)
        } catch {
            closeIfNotWritable(connection, error)
            throw error
        }
    }

    /// Closes a session whose server refused a write as read-only (`run`), and forgets it at once, as a deadline does:
    /// given back while still closing, it could be leased again.
    private func closeIfNotWritable(_ connection: PostgresConnection, _ error: any Error) {
        guard sqlState(of: error) == SQLStates.readOnlyTransaction else { return }
        Self.close(connection)
        forget(connection)
    }

    /// Runs one statement on a session of the pool. A statement that may write (`.writes`, the default) is run to its
    /// end and its commit confirmed before this returns — its rows (a write's few) are kept in memory — so a caller
    /// that drops them unread still learns of a failed statement or commit. One that only reads (`.reads`) streams:
    /// the session goes back once its rows are read to the end (or dropped), and a statement's error reaches only a
    /// caller that reads them to the end.
    @discardableResult
    func query(
        _ query: PostgresQuery, _ use: SessionUse = .writes, logger: Logger? = nil, file: String = #fileID, line: Int = #line
    ) async throws -> PooledRows {
        let connection = try await lease(use)
        guard use == .reads else {
            defer { release(connection) }
            return try await run(.writes, on: connection) { connection in
                var rows: [PostgresRow] = []
                for try await row in try await connection.statement(query, logger: logger ?? Self.silent, file: file, line: line) {
                    rows.append(row)
                }
                return PooledRows(collected: rows)
            }
        }
        let lease = Lease(pool: self, connection: connection)
        do {
            let rows = try await connection.statement(query, logger: logger ?? Self.silent, file: file, line: line)
            return PooledRows(streaming: rows, lease: lease)
        } catch {
            lease.end()
            throw error
        }
    }

    /// Until the task is cancelled or the service group shuts down; then stops the pool (`close`). Leases need no
    /// `run` to be served.
    func run() async {
        await withTaskCancellationOrGracefulShutdownHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let closed = state.withLock { state in
                    if !state.closed { state.running = continuation }
                    return state.closed
                }
                if closed { continuation.resume() }
            }
        } onCancelOrGracefulShutdown: {
            self.stop()
        }
    }

    /// Stops the pool and returns once its idle sessions have closed: later leases fail with `SessionPoolClosed`,
    /// waiting ones too, and each leased session is closed when it comes back.
    func close() async {
        for connection in stop() { try? await connection.closeFuture.get() }
    }

    /// `close`, without waiting: returns the idle sessions it is closing.
    @discardableResult
    private func stop() -> [PostgresConnection] {
        let (waiters, idle, running) = state.withLock { state in
            state.closed = true
            defer { state.waiters = []; state.idle = []; state.running = nil }
            return (state.waiters, state.idle, state.running)
        }
        for waiter in waiters { waiter.continuation.resume(throwing: SessionPoolClosed()) }
        for connection in idle { Self.close(connection) }
        running?.resume()
        return idle
    }

    // MARK: Leases

    /// Whether the pool has ever opened a session: an error before it did means PostgreSQL could not be reached.
    var hasConnected: Bool { state.withLock { $0.connectionsOpened > 0 } }

    /// The idle sessions not yet seen closed. A session PostgreSQL ended is seen closed only once its socket's end is
    /// read; until then a lease may take it, and its first query fails.
    var idleOpen: Int { state.withLock { $0.idle.count { !$0.isClosed } } }

    /// An idle session, or the next one given back or opened. A cancelled task gets none: work a deadline gave up on
    /// before it started must not take a session (`withConnection(within:)` answered without it).
    ///
    /// Work that only reads takes at most `readLimit` of the sessions (all but a quarter, at least one kept): 16
    /// clients reading big history pages, each with a new `asOf`, held every session, and appends waited until their
    /// deadline (14 written in 15 s instead of 3,012). Writes wait only for each other.
    func lease(_ use: SessionUse = .writes) async throws -> PostgresConnection {
        try Task.checkCancellation()
        if let connection = state.withLock({ $0.leaseIdle(for: use) }) { return connection }
        let id = state.withLock { $0.nextWaiter() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let next = state.withLock { state -> Next in
                    if state.closed { return .fail(SessionPoolClosed()) }
                    if let connection = state.leaseIdle(for: use) { return .lease(connection) }
                    // Checked inside the lock: a cancellation after it finds this waiter queued (`onCancel`).
                    if Task.isCancelled { return .fail(CancellationError()) }
                    state.waiters.append(Waiter(id: id, use: use, continuation: continuation))
                    return state.shouldConnect(maximum: maximum) ? .connect : .wait
                }
                switch next {
                case .lease(let connection): continuation.resume(returning: connection)
                case .fail(let error): continuation.resume(throwing: error)
                case .connect: connect()
                default: break
                }
            }
        } onCancel: {
            state.withLock { $0.removeWaiter(id) }?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Gives a leased session back: to the longest waiting lease, else to the idle ones. A closed one is forgotten.
    func release(_ connection: PostgresConnection) {
        let next = state.withLock { state -> Next in
            guard state.giveBack(connection.id) else { return .close(connection) }  // forgotten before
            if state.closed { return .close(connection) }
            if connection.isClosed { return state.shouldConnect(maximum: maximum) ? .connect : .wait }
            if let waiter = state.popWaiter() {
                state.take(connection.id, for: waiter.use)
                return .hand(connection, to: waiter)
            }
            state.idle.append(connection)
            return .wait
        }
        perform(next)
    }

    /// Forgets a leased session the caller has closed (a deadline's): its slot is free at once, whether or not the
    /// work stuck on it ever gives it back.
    func forget(_ connection: PostgresConnection) {
        let next = state.withLock { state -> Next in
            guard state.giveBack(connection.id), !state.closed else { return .wait }
            return state.shouldConnect(maximum: maximum) ? .connect : .wait
        }
        perform(next)
    }

    // MARK: Sessions

    private func connect() {
        let id = state.withLock { $0.nextConnection() }
        var logger = logger
        logger[metadataKey: "psql_connection_id"] = "\(id)"
        openSession(on: eventLoops.any(), id: id, logger: logger).whenComplete { result in
            self.perform(self.state.withLock { $0.connected(result, maximum: self.maximum, givingUpAfter: self.givingUpAfter) })
        }
    }

    private func perform(_ next: Next) {
        switch next {
        case .hand(let connection, let waiter): waiter.continuation.resume(returning: connection)
        case .failWaiters(let waiters, let error):
            for waiter in waiters { waiter.continuation.resume(throwing: error) }
        case .retry(after: let delay):
            eventLoops.any().scheduleTask(in: delay) { self.connect() }
        case .close(let connection): Self.close(connection)
        case .connect: connect()
        case .lease, .fail, .wait: break
        }
    }

    /// Closes `connection`, holding it until its channel has closed (PostgresNIO asserts that a connection is closed
    /// before it goes away).
    static func close(_ connection: PostgresConnection) {
        connection.close().whenComplete { _ in withExtendedLifetime(connection) {} }
    }

    private static let silent = Logger(label: "ledger.db", factory: { _ in SwiftLogNoOpLogHandler() })
}

/// The pool is stopped (`serve` is shutting down, or a command has finished).
public struct SessionPoolClosed: Error, CustomStringConvertible {
    public var description: String { "the database session pool is closed" }
}

extension SessionPool {
    fileprivate struct Waiter {
        let id: Int
        let use: SessionUse
        let continuation: CheckedContinuation<PostgresConnection, any Error>
    }

    /// What to do once the lock is released.
    fileprivate enum Next {
        case lease(PostgresConnection)
        case fail(any Error)
        case hand(PostgresConnection, to: Waiter)
        case failWaiters([Waiter], any Error)
        case retry(after: TimeAmount)
        case close(PostgresConnection)
        case connect
        case wait
    }

    fileprivate struct State {
        var idle: [PostgresConnection] = []
        /// The sessions in use, and what for.
        var leased: [PostgresConnection.ID: SessionUse] = [:]
        var readsLeased = 0
        /// The most sessions work that only reads may hold at once (`lease`).
        let readLimit: Int
        var connecting = 0
        var waiters: [Waiter] = []
        var waiterIDs = 0
        var connectionIDs = 0
        var running: CheckedContinuation<Void, Never>?
        var closed = false
        /// While the pool has no session and cannot open one: since when, and how many attempts have failed.
        var failingSince: NIODeadline?
        var failedAttempts = 0
        var connectionsOpened = 0

        init(maximum: Int) {
            readLimit = max(1, maximum - max(1, maximum / 4))
        }

        /// Whether work of this use may take a session now: writes always, reads below `readLimit`.
        func mayLease(for use: SessionUse) -> Bool {
            use == .writes || readsLeased < readLimit
        }

        mutating func take(_ id: PostgresConnection.ID, for use: SessionUse) {
            leased[id] = use
            if use == .reads { readsLeased += 1 }
        }

        /// Ends a lease; false when the session was forgotten before.
        mutating func giveBack(_ id: PostgresConnection.ID) -> Bool {
            guard let use = leased.removeValue(forKey: id) else { return false }
            if use == .reads { readsLeased -= 1 }
            return true
        }

        /// The most recently used idle session still open; those PostgreSQL closed meanwhile are forgotten.
        mutating func leaseIdle(for use: SessionUse) -> PostgresConnection? {
            guard mayLease(for: use) else { return nil }
            while let connection = idle.popLast() {
                guard !connection.isClosed else { continue }
                take(connection.id, for: use)
                return connection
            }
            return nil
        }

        /// A new session is opened while more leases that may take one wait than sessions are being opened, up to the
        /// maximum.
        mutating func shouldConnect(maximum: Int) -> Bool {
            let waiting = waiters.count { mayLease(for: $0.use) }
            guard !closed, waiting > connecting, idle.count + leased.count + connecting < maximum else { return false }
            connecting += 1
            return true
        }

        mutating func connected(_ result: Result<PostgresConnection, any Error>, maximum: Int, givingUpAfter: TimeAmount) -> Next {
            connecting -= 1
            switch result {
            case .success(let connection):
                connectionsOpened += 1
                failingSince = nil
                failedAttempts = 0
                if closed { return .close(connection) }
                if let waiter = popWaiter() {
                    take(connection.id, for: waiter.use)
                    return .hand(connection, to: waiter)
                }
                idle.append(connection)
                return .wait
            case .failure(let error):
                // Tried again while leases wait that no opening session will serve, even when sessions are in use:
                // their holders may be the very tasks waiting (a lease taken while holding another).
                guard !closed, waiters.count > connecting else { return .wait }
                let now = NIODeadline.now()
                let since = failingSince ?? now
                failedAttempts += 1
                guard !leased.isEmpty || now - since < givingUpAfter else {
                    failingSince = nil
                    failedAttempts = 0
                    defer { waiters = [] }
                    return .failWaiters(waiters, error)
                }
                failingSince = since
                connecting += 1
                let backoff = 100 * pow(1.25, Double(min(failedAttempts - 1, 30)))
                return .retry(after: .milliseconds(Int64(min(5_000, backoff))))
            }
        }

        /// The longest waiting lease that may take a session now.
        mutating func popWaiter() -> Waiter? {
            guard let index = waiters.firstIndex(where: { mayLease(for: $0.use) }) else { return nil }
            return waiters.remove(at: index)
        }

        mutating func removeWaiter(_ id: Int) -> Waiter? {
            guard let index = waiters.firstIndex(where: { $0.id == id }) else { return nil }
            return waiters.remove(at: index)
        }

        mutating func nextWaiter() -> Int {
            waiterIDs += 1
            return waiterIDs
        }

        mutating func nextConnection() -> Int {
            connectionIDs += 1
            return connectionIDs
        }
    }
}
