import Foundation
import HTTPTypes
import Hummingbird
import LedgerCore
import LedgerPostgres
import LedgerProviders
import NIOCore

/// `/v1/orders…`: post events, read an order, its history, and lists of orders.
struct OrderRoutes {
    typealias Context = LedgerRequestContext
    let ledger: Ledger
    /// Where the reads go: a replica when one is usable (`ReadSource`).
    let reads: ReadSource
    let metrics: LedgerMetrics
    /// History pages rendered once, answered again while their order's stream stays at their version.
    let histories: RenderedHistories
    /// Verifies StoreKit 2 signed transactions posted on `receipt.received`; nil when the App Store is not configured.
    let appStore: AppStoreJWSVerifier?
    /// The providers this service can ask about an order (`Recoverer`): none without `--providers-config`'s queries.
    let askableProviders: [Provider]

    func register(writers: RouterGroup<Context>, readers: RouterGroup<Context>) {
        writers.post("orders/{orderId}/events", use: postEvents)
        readers.get("orders/{orderId}", use: order)
        readers.get("orders/{orderId}/history", use: history)
        readers.get("orders", use: list)
    }

    @Sendable func postEvents(_ request: Request, context: Context) async throws -> Response {
        let orderId = try context.pathId("orderId")
        do {
            let posted = try PostedEvents(try await JSONResponse.readBody(request))
            let metadata = EventMetadata(
                actor: context.actor, requestId: context.requestId,
                correlationId: try Self.tracingId(request, .correlationId),
                causationId: try Self.tracingId(request, .causationId))
            let recorded = try await record(posted, orderId: orderId, metadata: metadata)
            if recorded.append.isReplay {
                return JSONResponse.make(status: .ok, body: recorded.json, headers: [.idempotentReplay: "true"])
            }
            metrics.appended(recorded.append.events.count)
            return JSONResponse.make(status: .created, body: recorded.json)
        } catch {
            metrics.refused(APIError(from: error).code)
            throw error
        }
    }

    /// Records the posted events, an older app's receipt given the purchase that is this order's
    /// (`LegacyReceipts`). Two orders sending one receipt at once may choose the same purchase: the append that loses
    /// is refused `transaction_bound_elsewhere` and nothing of it is written, so the choice is read and made again, a
    /// few times, before the refusal is answered.
    func record(_ posted: PostedEvents, orderId: String, metadata: EventMetadata) async throws -> Recorded {
        var choices = 0
        while true {
            let submissions = try await SignedTransactionReceipts.resolve(
                LegacyReceipts.resolve(posted.submissions, orderId: orderId, ledger: ledger), verifier: appStore)
            do {
                return try await ledger.record(
                    orderId: orderId, events: submissions, expectedVersion: posted.expectedVersion, metadata: metadata)
            } catch let refusal as Refusal where choices < 3 && LegacyReceipts.mayChooseAgain(after: refusal, posted.submissions) {
                choices += 1
            }
        }
    }

    @Sendable func order(_ request: Request, context: Context) async throws -> Response {
        let orderId = try context.pathId("orderId")
        return try await reads.serve(request) { ledger in
            guard let (order, recovery) = try await ledger.orderAndRecovery(orderId) else {
                throw APIError.notFound("order \(orderId) is not in the ledger")
            }
            guard case .object(var fields) = order.json else { return JSONResponse.make(status: .ok, body: order.json) }
            fields["recovery"] = recovery?.json ?? .null
            // Whether `POST …/recover` can ask its provider here: the console offers the question only then.
            fields["providerAskable"] = .bool(askableProviders.contains(order.provider))
            // Tagged by its bytes: the answer holds the recovery schedule's attempts too, which move without an event.
            return EntityTags.answer(request, body: ByteBuffer(bytes: JSONValue.object(fields).canonicalBytes))
        }
    }

    /// A history page holds at most this many events (`limit`), 100 unless asked: a long history is read page by
    /// page, never built whole in memory.
    static let maximumHistoryPage = 1000
    static let defaultHistoryPage = 100

    /// One page of the order's history: events after version `after` (0: from the first), `next` the `after` of
    /// the following page (null on the last). `asOf` applies to every page alike.
    @Sendable func history(_ request: Request, context: Context) async throws -> Response {
        let key = try Self.historyPage(orderId: try context.pathId("orderId"), QueryParameters(request))
        let held = request.headers.value(of: .ifNoneMatch)
        let histories = self.histories
        return try await reads.serve(request) { ledger in
            switch try await histories.answer(to: key, holding: held, on: ledger) {
            case .notModified(let etag): return Response(status: .notModified, headers: [.eTag: etag])
            case .page(let body, let etag): return JSONResponse.make(status: .ok, bytes: body, headers: [.eTag: etag])
            case nil: break
            }
            let (orderId, asOf, after, limit) = (key.orderId, key.asOf, key.after, key.limit)
            let (page, body) = try await BigPageReads.shared.read(limit: limit) {
                guard let page = try await ledger.history(orderId, asOf: asOf, after: after, limit: limit) else {
                    throw APIError.notFound("order \(orderId) is not in the ledger")
                }
                return (page, await BigPageReads.render({ page.json }, limit: limit))
            }
            guard let version = page.streamVersion else { return JSONResponse.make(status: .ok, bytes: body) }
            histories.keep(key, RenderedHistories.Page(version: version, body: body))
            return JSONResponse.make(status: .ok, bytes: body, headers: [.eTag: RenderedHistories.etag(version)])
        }
    }

    /// The page a history request asks for: its query's `asOf`, `limit` and `after`, or a 400 naming the parameter.
    static func historyPage(orderId: String, _ query: QueryParameters) throws -> RenderedHistories.Key {
        try query.onlyAllowing(["asOf", "limit", "after"])
        let asOf = try query.time("asOf")
        let limit = try query.integer("limit", in: 1...Int64(Self.maximumHistoryPage)) ?? Int64(Self.defaultHistoryPage)
        let after = try query.integer("after", in: 0...Int64(Int32.max)) ?? 0
        return RenderedHistories.Key(orderId: orderId, asOf: asOf, after: Int(after), limit: Int(limit))
    }

    /// A correlation or causation id, kept in every event's metadata: at most 128 visible ASCII characters (a UUID,
    /// a W3C trace id, a request id), or a 400 naming the header — a 60 KB one was stored verbatim on every event.
    static func tracingId(_ request: Request, _ name: HTTPField.Name) throws -> String? {
        guard let value = request.headers[name] else { return nil }
        guard (1...128).contains(value.utf8.count), value.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw APIError.invalidRequest(field: name.rawName, "\(name.rawName) must be 1–128 visible ASCII characters")
        }
        return value
    }

    @Sendable func list(_ request: Request, context: Context) async throws -> Response {
        let query = QueryParameters(request)
        try query.onlyAllowing(["accountId", "state", "limit", "cursor"])
        let state = try query.string("state").map { text in
            guard let state = OrderState(rawValue: text) else {
                throw APIError.invalidRequest(field: "state", "state must be one of \(OrderState.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            return state
        }
        // The cursor is the previous page's last order id (`nextCursor`).
        let accountId = try query.id("accountId"), cursor = try query.id("cursor", orderRule: true)
        let limit = Int(try query.integer("limit", in: 1...500) ?? 100)
        return try await reads.serve(request) { ledger in
            let page = try await ledger.orders(accountId: accountId, state: state, limit: limit, after: cursor)
            return JSONResponse.make(status: .ok, body: .object([
                "orders": .array(page.orders.map(\.json)),
                "nextCursor": .text(page.nextCursor),
            ]))
        }
    }
}

extension HTTPField.Name {
    static let correlationId = Self("X-Correlation-Id")!
    static let causationId = Self("X-Causation-Id")!
}
