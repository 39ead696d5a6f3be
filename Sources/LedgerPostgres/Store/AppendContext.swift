import Foundation
import Logging
import PostgresNIO

/// What an inline projection sees during an append: the open transaction, after the stream is locked and the
/// version checked, before the events are inserted. Throwing from the projection refuses the whole append.
public struct AppendContext: Sendable {
    /// The append's transaction; write projection tables through it.
    public let connection: PostgresConnection
    public let orderId: String
    /// The stream's version before these events (0: no stream yet).
    public let currentVersion: Int
    /// The database's clock for this append: every event of the batch is recorded at this time.
    public let recordedAt: Date
    public let logger: Logger
}

/// Updates projection tables inside the append's transaction, and returns what the caller wants back from it.
public typealias InlineProjection<Projected> = @Sendable (AppendContext, [NewEvent]) async throws -> Projected

/// Thrown by a projection that lost a race to a concurrent append (e.g. a unique row another order took):
/// the store rolls back and runs the whole append again, which then sees the winner's committed state.
public struct AppendRaceLost: Error, Sendable {
    public init() {}
}
