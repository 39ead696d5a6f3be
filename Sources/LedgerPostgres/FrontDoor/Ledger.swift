import Foundation
import LedgerCore
import Logging
import PostgresNIO

/// The orders entry point (`LedgerDatabase.ledger`): records events through the domain's rules and answers what
/// happened. Recording, a provider's message included, is in Append/ (the steps are listed at the top of
/// Ledger+Record.swift); an order, its history, the feed and its evidence are in Reads/.
public struct Ledger: Sendable {
    let store: EventStore
    let rows: OrderRows

    init(client: PostgresClient, logger: Logger = Logger(label: "ledger")) {
        self.init(store: EventStore(client: client, logger: logger), logger: logger)
    }

    private init(store: EventStore, logger: Logger) {
        self.store = store
        self.rows = OrderRows(logger: logger)
    }

    /// The ledger for reads on a streaming replica (`ReadReplicas`): the same reads, except that the token epoch
    /// they return confirms nothing — a replica's may lag — so a cached token is confirmed on the primary instead.
    static func reading(from replica: PostgresClient, logger: Logger = Logger(label: "ledger")) -> Ledger {
        Ledger(store: EventStore(client: replica, logger: logger, confirmsTokens: false), logger: logger)
    }

    var client: PostgresClient { store.client }
}
