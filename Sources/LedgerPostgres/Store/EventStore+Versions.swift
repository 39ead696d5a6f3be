import Foundation
import LedgerCore
import Logging
import PostgresNIO

/// The stream versions a pool's requests ask for, read together (`StatementGroup`): what a history or order answer
/// rendered before needs to know that it is still the answer (`RenderedHistories`). Reads of pages already rendered
/// are most of what auditors, support and the console do, and each is one small statement: read one at a time,
/// PostgreSQL's fixed cost per statement and the round trip were most of a read's database work.
typealias VersionGroup = StatementGroup<StreamName, Result<EventStore.StreamVersion, any Error>>

extension EventStore {
    /// A stream's version (nil: no such stream) and the token epoch read with it.
    struct StreamVersion: Sendable {
        let version: Int?
        let tokenEpoch: Int64
    }

    /// The stream versions asked for on this store's pool, read together.
    var versionGroup: VersionGroup { client.groups.group { VersionGroup(largest: 256) { (try? $0.get()) != nil } } }

    /// The stream's version now (nil: no such stream), confirming a cached token like a page does: all a
    /// request needs to know that an answer rendered at that version is still the answer. Read with the versions
    /// other requests on the pool ask for meanwhile; a group that failed (its leader's deadline, say) is read again
    /// alone, within this request's own deadline.
    func streamVersion(_ stream: StreamName) async throws -> Int? {
        let (client, logger) = (self.client, self.logger)
        var answer = await versionGroup.run(stream) { streams in await Self.versions(of: streams, on: client, logger: logger) }
        if case .failure = answer { answer = await Self.versions(of: [stream], on: client, logger: logger)[0] }
        let found = try answer.get()
        if confirmsTokens { try await TokenConfirmation.confirm(epoch: found.tokenEpoch) }
        return found.version
    }

    /// One statement for all of `streams`; an answer for each, in order.
    private static func versions(of streams: [StreamName], on client: SessionPool, logger: Logger) async -> [Result<StreamVersion, any Error>] {
        do {
            let found = try await client.withConnection(within: Deadline.remaining, .reads) { connection in
                var found: [StreamVersion] = []
                let rows = try await connection.statement(versionsQuery(streams), preparedAs: VersionsShape.self, logger: logger)
                for try await (version, epoch) in rows.decode((Int?, Int64).self) {
                    found.append(StreamVersion(version: version, tokenEpoch: epoch))
                }
                return found
            }
            guard found.count == streams.count else { throw VersionsAnsweredWrongCount(asked: streams.count, answered: found.count) }
            return found.map { .success($0) }
        } catch {
            return streams.map { _ in .failure(error) }
        }
    }

    /// A row per stream asked for, in order: its version (NULL: none), and the token epoch. Each looked up
    /// through the primary key (a lateral join), so the generic plan never scans `streams`.
    static func versionsQuery(_ streams: [StreamName]) -> PostgresQuery {
        """
        SELECT s.version, (SELECT epoch FROM api_token_epoch)
        FROM unnest(\(streams.map(\.kind.name))::text[], \(streams.map(\.id))::text[]) WITH ORDINALITY AS w(kind, stream_id, n)
        LEFT JOIN LATERAL (SELECT version FROM streams WHERE kind = w.kind AND stream_id = w.stream_id) s ON true
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
    var description: String { "asked for the versions of \(asked) streams, answered \(answered)" }
}
