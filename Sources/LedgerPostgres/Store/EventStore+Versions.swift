import Foundation
import Logging
import PostgresNIO

/// The stream versions a pool's requests ask for, read together (`StatementGroup`): what a history or order answer
/// rendered before needs to know that it is still the answer (`RenderedHistories`). Reads of pages already rendered
/// are most of what auditors, support and the console do, and each is one small statement: read one at a time,
/// PostgreSQL's fixed cost per statement and the round trip were most of a read's database work.
typealias VersionGroup = StatementGroup<String, Result<EventStore.StreamVersion, any Error>>

extension EventStore {
    /// An order's stream version (nil: no such order) and the token epoch read with it.
    struct StreamVersion: Sendable {
        let version: Int?
        let tokenEpoch: Int64
    }

    /// The stream versions asked for on this store's pool, read together.
    var versionGroup: VersionGroup { client.groups.group { VersionGroup(largest: 256) { (try? $0.get()) != nil } } }

    /// The order's stream version now (nil: no such order), confirming a cached token like a page does: all a
    /// request needs to know that an answer rendered at that version is still the answer. Read with the versions
    /// other requests on the pool ask for meanwhile; a group that failed (its leader's deadline, say) is read again
    /// alone, within this request's own deadline.
    func streamVersion(_ orderId: String) async throws -> Int? {
        let (client, logger) = (self.client, self.logger)
        var answer = await versionGroup.run(orderId) { orderIds in await Self.versions(of: orderIds, on: client, logger: logger) }
        if case .failure = answer { answer = await Self.versions(of: [orderId], on: client, logger: logger)[0] }
        let found = try answer.get()
        if confirmsTokens { try await TokenConfirmation.confirm(epoch: found.tokenEpoch) }
        return found.version
    }

    /// One statement for all of `orderIds`; an answer for each, in order.
    private static func versions(of orderIds: [String], on client: SessionPool, logger: Logger) async -> [Result<StreamVersion, any Error>] {
        do {
            let found = try await client.withConnection(within: Deadline.remaining, .reads) { connection in
                var found: [StreamVersion] = []
                let rows = try await connection.query(versionsQuery(orderIds), preparedAs: VersionsShape.self, logger: logger)
                for try await (version, epoch) in rows.decode((Int?, Int64).self) {
                    found.append(StreamVersion(version: version, tokenEpoch: epoch))
                }
                return found
            }
            guard found.count == orderIds.count else { throw VersionsAnsweredWrongCount(asked: orderIds.count, answered: found.count) }
            return found.map { .success($0) }
        } catch {
            return orderIds.map { _ in .failure(error) }
        }
    }

    /// A row per order asked for, in order: its stream's version (NULL: none), and the token epoch. Each looked up
    /// through the primary key (a lateral join), so the generic plan never scans `streams`.
    static func versionsQuery(_ orderIds: [String]) -> PostgresQuery {
        """
        SELECT s.version, (SELECT epoch FROM api_token_epoch)
        FROM unnest(\(orderIds)::text[]) WITH ORDINALITY AS w(order_id, n)
        LEFT JOIN LATERAL (SELECT version FROM streams WHERE order_id = w.order_id) s ON true
        ORDER BY w.n
        """
    }

    enum VersionsShape: StatementShape {
        static let name = "ledger.stream-versions"
        static let sql = versionsQuery([]).sql
    }
}

/// The versions statement answered another number of rows than orders asked for: PostgreSQL broke its contract (a
/// 500 for those reads, never a trap).
struct VersionsAnsweredWrongCount: Error, CustomStringConvertible {
    let asked: Int
    let answered: Int
    var description: String { "asked for the stream versions of \(asked) orders, answered \(answered)" }
}
