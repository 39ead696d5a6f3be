import Foundation
import Hummingbird
import LedgerCore
import LedgerPostgres

/// `/v1/transactions/{id}` ("was this credited?"), `/v1/events` (the global feed) and `/v1/ledger/digest`.
struct ReadRoutes {
    typealias Context = LedgerRequestContext
    let ledger: Ledger
    let operations: Operations
    /// The feed may be read on a replica (`ReadSource`); the transaction lookup and the digest are the primary's.
    let reads: ReadSource

    /// A feed page holds at most this many events.
    static let maximumFeedPage = 1000

    func register(readers: RouterGroup<Context>) {
        readers.get("transactions/{transactionId}", use: transaction)
        readers.get("events", use: feed)
        readers.get("ledger/digest", use: digest)
    }

    /// The latest digest checkpoint (`ledger seal`, or `serve` in the background); 404 before the first.
    @Sendable func digest(_ request: Request, context: Context) async throws -> Response {
        guard let checkpoint = try await operations.latestDigest() else {
            throw APIError.notFound("no digest has been sealed yet")
        }
        return JSONResponse.make(status: .ok, body: checkpoint.json)
    }

    @Sendable func transaction(_ request: Request, context: Context) async throws -> Response {
        let transactionId = try context.pathId("transactionId")
        guard let status = try await ledger.transaction(transactionId) else {
            throw APIError.notFound("transaction \(transactionId) has never been seen by the ledger")
        }
        return JSONResponse.make(status: .ok, body: status.json)
    }

    /// Pages the feed in commit order (see `EventStore.readAll`). `next` is the cursor to pass as `after`;
    /// on an empty page it is the cursor given, so a consumer keeps polling with it.
    @Sendable func feed(_ request: Request, context: Context) async throws -> Response {
        let query = QueryParameters(request)
        try query.onlyAllowing(["after", "limit"])
        let after = try query.integer("after", in: 0...Int64.max).flatMap { $0 == 0 ? nil : $0 }
        let limit = Int(try query.integer("limit", in: 1...Int64(Self.maximumFeedPage)) ?? 100)
        // On a replica, only one that holds the cursor's event: the page resumes after it.
        return try await reads.serve(request, seeing: after) { ledger in
            try await BigPageReads.shared.read(limit: limit) {
                let events = try await ledger.feed(after: after, limit: limit)
                let next = events.last?.position ?? after
                let body = await BigPageReads.render({
                    .object(["events": .array(events.map(\.feedJSON)), "next": next.map(JSONValue.int) ?? .null])
                }, limit: limit)
                return JSONResponse.make(status: .ok, bytes: body)
            }
        }
    }
}
