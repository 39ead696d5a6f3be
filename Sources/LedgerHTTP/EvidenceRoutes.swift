import Foundation
import Hummingbird
import LedgerCore
import LedgerPostgres

/// An order's evidence beside its story: `/v1/orders/{orderId}/chain` (each event's hash and whether the chain holds
/// up to it, as `ledger verify` checks it) and `/v1/orders/{orderId}/refusals` (what was refused for it, from the
/// refusal log). What the console shows with the timeline; any client may read them.
struct EvidenceRoutes {
    typealias Context = LedgerRequestContext
    /// Both may be read on a replica (`ReadSource`).
    let reads: ReadSource

    /// Refusals listed for one order, newest first.
    static let maximumRefusals = 100

    func register(readers: RouterGroup<Context>) {
        readers.get("orders/{orderId}/chain", use: chain)
        readers.get("orders/{orderId}/refusals", use: refusals)
    }

    @Sendable func chain(_ request: Request, context: Context) async throws -> Response {
        let orderId = try context.pathId("orderId")
        try QueryParameters(request).onlyAllowing([])
        return try await reads.serve(request) { ledger in
            let links = try await ledger.chain(ofOrder: orderId)
            guard !links.isEmpty else { throw APIError.notFound("order \(orderId) is not in the ledger") }
            return Self.chainAnswer(orderId, links)
        }
    }

    private static func chainAnswer(_ orderId: String, _ links: [ChainLink]) -> Response {
        JSONResponse.make(status: .ok, body: [
            "orderId": .string(orderId),
            "verified": .bool(links.last?.verifiedUpToHere == true),
            "events": .array(links.map { link in
                [
                    "version": .int(Int64(link.version)), "position": .int(link.position), "hash": .text(link.hash),
                    "problem": .text(link.problem), "verifiedUpToHere": .bool(link.verifiedUpToHere),
                ]
            }),
        ])
    }

    @Sendable func refusals(_ request: Request, context: Context) async throws -> Response {
        let orderId = try context.pathId("orderId")
        try QueryParameters(request).onlyAllowing([])
        return try await reads.serve(request) { ledger in
            Self.refusalsAnswer(orderId, try await ledger.refusals(ofOrder: orderId, limit: Self.maximumRefusals))
        }
    }

    private static func refusalsAnswer(_ orderId: String, _ refusals: [RecordedRefusal]) -> Response {
        JSONResponse.make(status: .ok, body: [
            "orderId": .string(orderId),
            "refusals": .array(refusals.map { refusal in
                [
                    "recordedAt": .time(refusal.recordedAt), "actor": .string(refusal.actor),
                    "eventType": .string(refusal.eventType), "transactionId": .text(refusal.transactionId),
                    "code": .string(refusal.code), "details": refusal.details,
                ]
            }),
        ])
    }
}
