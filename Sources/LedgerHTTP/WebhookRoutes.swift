import Foundation
import Hummingbird
import LedgerCore
import LedgerPostgres

/// `/v1/webhooks` (scope `webhooks:manage`): the endpoints the ledger sends its events to, managed as
/// `ledger webhooks` manages them (README, "Webhooks"). A secret is in the answer that made it, and in no other.
struct WebhookRoutes {
    typealias Context = LedgerRequestContext
    let webhooks: Webhooks

    func register(managers: RouterGroup<Context>) {
        managers.post("webhooks", use: add)
        managers.get("webhooks", use: list)
        managers.get("webhooks/{name}", use: endpoint)
        managers.delete("webhooks/{name}", use: remove)
        managers.post("webhooks/{name}/disable", use: disable)
        managers.post("webhooks/{name}/enable", use: enable)
        managers.post("webhooks/{name}/rotate-secret", use: rotateSecret)
        managers.get("webhooks/{name}/deliveries", use: deliveries)
        managers.get("webhooks/{name}/deliveries/{eventId}", use: attempts)
        managers.post("webhooks/{name}/replay", use: replay)
    }

    /// `{"name", "url", "events": ["order.*", …]}` → 201 with the endpoint and its `secret`, shown this once.
    @Sendable func add(_ request: Request, context: Context) async throws -> Response {
        let members = try await Self.object(request, fields: ["name", "url", "events"])
        guard case .string(let name)? = members["name"] else { throw APIError.invalidRequest(field: "name", "name is required, a string") }
        guard FeedConsumer.isValidName(name) else {
            throw APIError.invalidRequest(field: "name", WebhookEndpointError.invalidName(name).description)
        }
        guard case .string(let text)? = members["url"] else { throw APIError.invalidRequest(field: "url", "url is required, a string") }
        let url: WebhookEndpointURL
        do { url = try WebhookEndpointURL(text) } catch { throw APIError.invalidRequest(field: "url", error.description) }
        guard case .array(let patterns)? = members["events"], !patterns.isEmpty else {
            throw APIError.invalidRequest(field: "events", "events is required: a non-empty array of selectors such as \"order.*\"")
        }
        var selectors: [WebhookEventSelector] = []
        for pattern in patterns {
            guard case .string(let text) = pattern, let selector = WebhookEventSelector(text) else {
                throw APIError.invalidRequest(
                    field: "events", WebhookEventSelector.InvalidSelector(pattern: pattern.canonicalJSON).description)
            }
            if !selectors.contains(selector) { selectors.append(selector) }
        }
        let now = Date()
        let secret: WebhookSecret
        do {
            secret = try await webhooks.add(name: name, url: url, selectors: selectors)
        } catch WebhookEndpointError.nameTaken(let name) {
            throw APIError(.conflict, "name_taken", WebhookEndpointError.nameTaken(name).description, details: ["field": "name"])
        }
        context.logger.notice("webhook endpoint added", metadata: ["webhook": "\(name)", "by": "\(context.actor)"])
        guard let endpoint = try await webhooks.endpoint(name, now: now), case .object(var answer) = endpoint.json else {
            throw APIError.notFound(WebhookEndpointError.notFound(name).description)
        }
        answer["secret"] = .string(secret.text)
        return JSONResponse.make(status: .created, body: .object(answer))
    }

    @Sendable func list(_ request: Request, context: Context) async throws -> Response {
        try QueryParameters(request).onlyAllowing([])
        return JSONResponse.make(status: .ok, body: ["webhooks": .array(try await webhooks.list(now: Date()).map(\.json))])
    }

    @Sendable func endpoint(_ request: Request, context: Context) async throws -> Response {
        let name = try context.pathId("name")
        guard let endpoint = try await webhooks.endpoint(name, now: Date()) else { throw Self.notFound(name) }
        return JSONResponse.make(status: .ok, body: endpoint.json)
    }

    @Sendable func remove(_ request: Request, context: Context) async throws -> Response {
        let name = try context.pathId("name")
        try await Self.known(name) { try await webhooks.remove(name) }
        context.logger.notice("webhook endpoint removed", metadata: ["webhook": "\(name)", "by": "\(context.actor)"])
        return Response(status: .noContent)
    }

    @Sendable func disable(_ request: Request, context: Context) async throws -> Response {
        let name = try context.pathId("name")
        try await Self.known(name) { try await webhooks.disable(name, reason: "disabled by \(context.actor)") }
        return try await endpoint(request, context: context)
    }

    @Sendable func enable(_ request: Request, context: Context) async throws -> Response {
        let name = try context.pathId("name")
        try await Self.known(name) { try await webhooks.enable(name, now: Date()) }
        return try await endpoint(request, context: context)
    }

    /// `{"overlapSeconds"}` (default a day, at most 30 days): both secrets sign meanwhile. 200 with the new `secret`.
    @Sendable func rotateSecret(_ request: Request, context: Context) async throws -> Response {
        let name = try context.pathId("name")
        let members = try await Self.object(request, fields: ["overlapSeconds"], emptyAllowed: true)
        let overlap: Int64
        switch members["overlapSeconds"] {
        case nil: overlap = 86_400
        case .int(let seconds)? where (0...2_592_000).contains(seconds): overlap = seconds
        default: throw APIError.invalidRequest(field: "overlapSeconds", "overlapSeconds must be a whole number from 0 to 2592000")
        }
        let secret = try await Self.known(name) {
            try await webhooks.rotateSecret(name, overlap: .seconds(overlap), now: Date())
        }
        context.logger.notice("webhook secret rotated", metadata: ["webhook": "\(name)", "by": "\(context.actor)"])
        guard let endpoint = try await webhooks.endpoint(name, now: Date()), case .object(var answer) = endpoint.json else {
            throw Self.notFound(name)
        }
        answer["secret"] = .string(secret.text)
        return JSONResponse.make(status: .ok, body: .object(answer))
    }

    /// `?state=pending|delivered|given_up&before=<position>&limit=` (default 50, at most 500): the latest first;
    /// `next` is the `before` of the following page.
    @Sendable func deliveries(_ request: Request, context: Context) async throws -> Response {
        let name = try context.pathId("name")
        let query = QueryParameters(request)
        try query.onlyAllowing(["state", "before", "limit"])
        let state = try query.string("state").map { text in
            guard let state = WebhookDeliveryState(rawValue: text) else {
                throw APIError.invalidRequest(field: "state", "state must be one of pending, delivered, given_up")
            }
            return state
        }
        let before = try query.integer("before", in: 1...Int64.max)
        let limit = Int(try query.integer("limit", in: 1...500) ?? 50)
        let page = try await Self.known(name) {
            try await webhooks.deliveries(name, state: state, before: before, limit: limit, now: Date())
        }
        return JSONResponse.make(status: .ok, body: [
            "webhook": .string(name), "deliveries": .array(page.map(\.json)),
            "next": page.count == limit ? page.last.map { .int($0.position) } ?? .null : .null,
        ])
    }

    /// Every attempt to send one event to the endpoint.
    @Sendable func attempts(_ request: Request, context: Context) async throws -> Response {
        let name = try context.pathId("name")
        let text = try context.pathId("eventId")
        guard let eventId = UUID(uuidString: text) else { throw APIError.invalidRequest(field: "eventId", "eventId must be a UUID") }
        let attempts = try await webhooks.attempts(name, eventId: eventId)
        return JSONResponse.make(status: .ok, body: [
            "webhook": .string(name), "eventId": .string(eventId.lowercasedText), "attempts": .array(attempts.map(\.json)),
        ])
    }

    /// `{"eventId"}`, `{"fromPosition", "toPosition"}` (both included) or `{"from", "to"}` (RFC 3339, recorded at or
    /// after `from`, before `to`): those of its events the endpoint selects are sent again, with their ids. 202.
    @Sendable func replay(_ request: Request, context: Context) async throws -> Response {
        let name = try context.pathId("name")
        let members = try await Self.object(request, fields: ["eventId", "fromPosition", "toPosition", "from", "to"])
        let selection: WebhookReplay
        switch (members["eventId"], members["fromPosition"], members["toPosition"], members["from"], members["to"]) {
        case (.string(let text)?, nil, nil, nil, nil):
            guard let eventId = UUID(uuidString: text) else { throw APIError.invalidRequest(field: "eventId", "eventId must be a UUID") }
            selection = .event(eventId)
        case (nil, .int(let from)?, .int(let to)?, nil, nil) where from >= 1 && from <= to:
            selection = .positions(from: from, to: to)
        case (nil, nil, nil, .string(let from)?, .string(let to)?):
            guard let start = RFC3339.parse(from) else { throw APIError.invalidRequest(field: "from", "from must be an RFC 3339 time") }
            guard let end = RFC3339.parse(to), end > start else {
                throw APIError.invalidRequest(field: "to", "to must be an RFC 3339 time after from")
            }
            selection = .recorded(from: start, to: end)
        default:
            throw APIError.invalidRequest(
                field: "body", "give eventId, or fromPosition and toPosition (1 ≤ fromPosition ≤ toPosition), or from and to")
        }
        let queued = try await Self.known(name) { try await webhooks.replay(name, selection, now: Date()) }
        context.logger.notice("webhook replay", metadata: ["webhook": "\(name)", "queued": "\(queued)", "by": "\(context.actor)"])
        return JSONResponse.make(status: .accepted, body: ["webhook": .string(name), "queued": .int(Int64(queued))])
    }

    private static func notFound(_ name: String) -> APIError {
        .notFound(WebhookEndpointError.notFound(name).description)
    }

    /// `body`, with an unknown endpoint a 404.
    private static func known<T>(_ name: String, _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch WebhookEndpointError.notFound {
            throw notFound(name)
        }
    }

    /// The request's JSON object, none of its members but `fields`; an absent body is `{}` when `emptyAllowed`.
    private static func object(_ request: Request, fields: Set<String>, emptyAllowed: Bool = false) async throws -> [String: JSONValue] {
        let empty = request.headers[.contentType] == nil && (request.headers[.contentLength] ?? "0") == "0"
            && request.headers[.transferEncoding] == nil
        let body = emptyAllowed && empty ? JSONValue.object([:]) : try await JSONResponse.readBody(request)
        guard case .object(let members) = body else { throw APIError.invalidRequest(field: "body", "the body must be a JSON object") }
        if let unknown = members.keys.sorted().first(where: { !fields.contains($0) }) {
            throw APIError.invalidRequest(field: unknown, "\(unknown) is not a field here (only \(fields.sorted().joined(separator: ", ")))")
        }
        return members
    }
}
