import ArgumentParser
import Foundation
import LedgerCore
import LedgerPostgres

/// `ledger webhooks add|list|disable|enable|rotate-secret|remove|deliveries|replay`: where the ledger sends its
/// events (README, "Webhooks"); `serve` sends them. The same over the API, `/v1/webhooks`, scope `webhooks:manage`.
struct WebhooksCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webhooks", abstract: "Manage webhook endpoints and see their deliveries.",
        subcommands: [Add.self, List.self, Disable.self, Enable.self, RotateSecret.self, Remove.self, Deliveries.self, Replay.self])

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add an endpoint; prints its signing secret (whsec_…) once, alone on stdout.",
            discussion: "It is sent the events it selects recorded from now on (replay sends earlier ones).")
        @Option(help: "The endpoint's name: lower case letters, digits, _ . -, starting with a letter.") var name: String
        @Option(help: "Where to send: an http or https URL.") var url: String
        @Option(help: "Comma-separated selectors: * (all), order.*, subscription.*, or event types such as order.granted.")
        var events: String
        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            let endpointURL: WebhookEndpointURL
            do { endpointURL = try WebhookEndpointURL(url) } catch { throw ValidationError("--url: \(error)") }
            let selectors: [WebhookEventSelector]
            switch WebhookEventSelector.parseList(events) {
            case .success(let parsed): selectors = parsed
            case .failure(let refused): throw ValidationError("--events: \(refused)")
            }
            let name = name
            let secret = try await database.withLedger { opened in
                try await opened.webhooks.add(name: name, url: endpointURL, selectors: selectors)
            }
            try StandardOutput.line(secret.text)
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List endpoints: health, deliveries pending and how long the oldest has waited (never a secret).")
        @Flag(help: "Print {\"webhooks\": [...]} as GET /v1/webhooks does.") var json = false
        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            let now = Date()
            let endpoints = try await database.withLedger { opened in try await opened.webhooks.list(now: now) }
            if json { return try StandardOutput.line(JSONValue.object(["webhooks": .array(endpoints.map(\.json))]).canonicalJSON) }
            guard !endpoints.isEmpty else { return try StandardOutput.line("no webhook endpoints") }
            try StandardOutput.line(Table(
                ["NAME", "HEALTH", "URL", "EVENTS", "PENDING", "OLDEST", "LAST DELIVERED"],
                endpoints.map { endpoint in
                    [endpoint.name, endpoint.health + (endpoint.disabledReason.map { " (\($0))" } ?? ""), endpoint.url,
                     endpoint.selectors.joined(separator: ","), String(endpoint.pending),
                     endpoint.oldestPendingSince.map { String(format: "%.0f s", max(0, now.timeIntervalSince($0))) } ?? "-",
                     endpoint.lastDeliveredAt.map(RFC3339Text) ?? "-"]
                }, numeric: [4]).rendered)
        }
    }

    struct Disable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Stop sending to an endpoint; its events still queue.")
        @Argument(help: "The endpoint's name.") var name: String
        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            let name = name
            try await database.withLedger { opened in try await opened.webhooks.disable(name, reason: "disabled by an operator") }
            try StandardOutput.line("disabled \(name)")
        }
    }

    struct Enable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Send to an endpoint again (disabled or failing): everything it has queued is due at once, in order per stream.")
        @Argument(help: "The endpoint's name.") var name: String
        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            let name = name
            try await database.withLedger { opened in try await opened.webhooks.enable(name, now: Date()) }
            try StandardOutput.line("enabled \(name)")
        }
    }

    struct RotateSecret: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate-secret",
            abstract: "A new signing secret, printed once; the old one signs too (a second signature) for --overlap seconds.")
        @Argument(help: "The endpoint's name.") var name: String
        @Option(help: "Seconds both secrets sign (0 to 2592000).") var overlap = 86_400
        @OptionGroup var database: DatabaseOptions

        func validate() throws {
            guard (0...2_592_000).contains(overlap) else { throw ValidationError("--overlap must be 0 to 2592000 seconds") }
        }

        func run() async throws {
            let (name, overlap) = (name, overlap)
            let secret = try await database.withLedger { opened in
                try await opened.webhooks.rotateSecret(name, overlap: .seconds(overlap), now: Date())
            }
            try StandardOutput.line(secret.text)
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove an endpoint, its queue and its attempts.")
        @Argument(help: "The endpoint's name.") var name: String
        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            let name = name
            try await database.withLedger { opened in try await opened.webhooks.remove(name) }
            try StandardOutput.line("removed \(name)")
        }
    }

    struct Deliveries: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "An endpoint's deliveries, the latest first, with their last attempt; or one event's every attempt.")
        @Argument(help: "The endpoint's name.") var name: String
        @Option(help: "Only those pending, delivered or given_up.") var state: String?
        @Option(help: "Every attempt to send this event (its id).") var event: String?
        @Option(help: "At most this many (1 to 500).") var limit = 50
        @Flag(help: "Print JSON as GET /v1/webhooks/NAME/deliveries does.") var json = false
        @OptionGroup var database: DatabaseOptions

        func validate() throws {
            guard (1...500).contains(limit) else { throw ValidationError("--limit must be 1 to 500") }
            if let state, WebhookDeliveryState(rawValue: state) == nil {
                throw ValidationError("--state must be one of pending, delivered, given_up")
            }
            if let event, UUID(uuidString: event) == nil { throw ValidationError("--event must be an event id (a UUID)") }
        }

        func run() async throws {
            let (name, limit, state) = (name, limit, state.flatMap(WebhookDeliveryState.init))
            if let eventId = event.flatMap(UUID.init(uuidString:)) {
                let attempts = try await database.withLedger { opened in try await opened.webhooks.attempts(name, eventId: eventId) }
                if json { return try StandardOutput.line(JSONValue.object(["attempts": .array(attempts.map(\.json))]).canonicalJSON) }
                return try StandardOutput.line(Table(["AT", "NODE", "OUTCOME", "STATUS", "MS", "ANSWER"], attempts.map { attempt in
                    [RFC3339Text(attempt.at), attempt.node, attempt.outcome.rawValue, attempt.status.map(String.init) ?? "-",
                     String(attempt.latencyMilliseconds), String(attempt.response.prefix(60))]
                }, numeric: [3, 4]).rendered)
            }
            let deliveries = try await database.withLedger { opened in
                try await opened.webhooks.deliveries(name, state: state, before: nil, limit: limit, now: Date())
            }
            if json { return try StandardOutput.line(JSONValue.object(["deliveries": .array(deliveries.map(\.json))]).canonicalJSON) }
            try StandardOutput.line(Table(
                ["POSITION", "EVENT", "STREAM", "TYPE", "STATE", "ATTEMPTS", "LAST", "NEXT"],
                deliveries.map { delivery in
                    [String(delivery.position), delivery.eventId.lowercasedText, delivery.stream.description, delivery.type,
                     delivery.state.rawValue, String(delivery.attempts),
                     delivery.lastAttempt.map { "\($0.outcome.rawValue) \($0.status.map(String.init) ?? "")" } ?? "-",
                     delivery.nextAttemptAt.map(RFC3339Text) ?? "-"]
                }, numeric: [0, 5]).rendered)
        }
    }

    struct Replay: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Send events to an endpoint again, with their ids: one event, a range of feed positions, or of times.")
        @Argument(help: "The endpoint's name.") var name: String
        @Option(help: "One event, by its id.") var event: String?
        @Option(name: .customLong("from-position"), help: "The first feed position.") var fromPosition: Int64?
        @Option(name: .customLong("to-position"), help: "The last feed position (included).") var toPosition: Int64?
        @Option(help: "Recorded at or after (RFC 3339).") var from: String?
        @Option(help: "Recorded before (RFC 3339).") var to: String?
        @OptionGroup var database: DatabaseOptions

        func selection() throws -> WebhookReplay {
            switch (event, fromPosition, toPosition, from, to) {
            case (let event?, nil, nil, nil, nil):
                guard let eventId = UUID(uuidString: event) else { throw ValidationError("--event must be an event id (a UUID)") }
                return .event(eventId)
            case (nil, let first?, let last?, nil, nil):
                guard first >= 1, first <= last else { throw ValidationError("--from-position must be at least 1 and at most --to-position") }
                return .positions(from: first, to: last)
            case (nil, nil, nil, let from?, let to?):
                guard let start = RFC3339.parse(from) else { throw ValidationError("--from must be an RFC 3339 time") }
                guard let end = RFC3339.parse(to), end > start else { throw ValidationError("--to must be an RFC 3339 time after --from") }
                return .recorded(from: start, to: end)
            default:
                throw ValidationError("give --event, or --from-position and --to-position, or --from and --to")
            }
        }

        func validate() throws { _ = try selection() }

        func run() async throws {
            let (name, selection) = (name, try selection())
            let queued = try await database.withLedger { opened in try await opened.webhooks.replay(name, selection, now: Date()) }
            try StandardOutput.line("queued \(queued) event(s) for \(name)")
        }
    }
}
