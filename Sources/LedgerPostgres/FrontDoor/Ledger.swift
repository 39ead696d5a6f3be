import Foundation
import LedgerCore
import Logging
import PostgresNIO

/// The orders entry point (`LedgerDatabase.ledger`): records events through the domain's rules and answers what
/// happened. Recording, a provider's message included, is in Append/ (the steps are listed at the top of
/// Ledger+Record.swift); an order, its history, the feed and its evidence are in Reads/.
public struct Ledger: Sendable {
    private let pools: EventLoopPools
    let logger: Logger
    /// Whether its reads' token epoch confirms a cached token (`EventStore.confirmsTokens`; not on a replica).
    let confirmsTokens: Bool
    let rows: OrderRows
    /// The streams this node wrote last (`RecentStreams`), shared by every request.
    let recentStreams: RecentStreams
    /// Word of this node's committed appends, for the webhooks' loop (`NewEvents`).
    public let newEvents = NewEvents()

    init(client: SessionPool, logger: Logger = Logger(label: "ledger"), recentStreams: RecentStreams = RecentStreams()) {
        self.init(pools: EventLoopPools(client), logger: logger, recentStreams: recentStreams)
    }

    init(
        pools: EventLoopPools, logger: Logger = Logger(label: "ledger"), confirmsTokens: Bool = true,
        recentStreams: RecentStreams = RecentStreams()
    ) {
        self.pools = pools
        self.logger = logger
        self.confirmsTokens = confirmsTokens
        self.rows = OrderRows(logger: logger)
        self.recentStreams = recentStreams
    }

    /// The ledger for reads on a streaming replica (`ReadReplicas`): the same reads, except that the token epoch
    /// they return confirms nothing — a replica's may lag — so a cached token is confirmed on the primary instead.
    static func reading(from replica: SessionPool, logger: Logger = Logger(label: "ledger")) -> Ledger {
        Ledger(pools: EventLoopPools(replica), logger: logger, confirmsTokens: false)
    }

    /// The store on the pool of the caller's event loop (`EventLoopPools`).
    var store: EventStore {
        EventStore(
            client: pools.current, logger: logger, confirmsTokens: confirmsTokens, recentStreams: recentStreams,
            newEvents: newEvents)
    }

    var client: SessionPool { pools.current }
}
