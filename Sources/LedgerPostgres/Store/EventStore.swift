import Foundation
import LedgerCore
import Logging
import PostgresNIO

/// The append-only event store: one stream per order, on PostgreSQL. Its reads are here (EventStore+Read.swift);
/// its append, one or two statements with the order projection written inline, is a step of the append path
/// (Append/).
struct EventStore: Sendable {
    let client: SessionPool
    let logger: Logger
    /// Whether the token epoch its reads return confirms the request's cached token (`TokenConfirmation`). Not on a
    /// replica: its epoch may lag the primary's, and a revoked token must be refused on its next request.
    let confirmsTokens: Bool
    /// The streams this node wrote last, which its appends decide from without a read (`RecentStreams`).
    let recentStreams: RecentStreams
    /// Told of every append committed (`NewEvents`).
    let newEvents: NewEvents

    /// How many times an append reads and decides again after losing a race before the error is passed on.
    static let raceRetries = 8

    init(
        client: SessionPool, logger: Logger = Logger(label: "ledger.store"), confirmsTokens: Bool = true,
        recentStreams: RecentStreams = RecentStreams(), newEvents: NewEvents = NewEvents()
    ) {
        self.client = client
        self.logger = logger
        self.confirmsTokens = confirmsTokens
        self.recentStreams = recentStreams
        self.newEvents = newEvents
    }
}
