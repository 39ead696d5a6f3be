import Foundation

/// Which events an endpoint is sent (`--events`): `*` (every event), `<kind>.*` (every event of that kind's streams:
/// `order.*` is an order's every event, `payment.queued` and `receipt.verified` included; `subscription.*`), or one
/// event type by its name (`order.granted`, `subscription.renewed`). Anything else is refused when the endpoint is
/// added, so a typo never silently selects nothing. Which events a list selects is decided by the database
/// (`webhook_selects`, schema/029), where the events are queued.
public struct WebhookEventSelector: Sendable, Hashable, CustomStringConvertible {
    public let pattern: String

    /// Nil for a pattern that is none of the three forms, or names a kind or an event type the ledger does not have.
    public init?(_ pattern: String) {
        if pattern == "*" {
            self.pattern = pattern
        } else if pattern.hasSuffix(".*") {
            let kind = StreamKind(String(pattern.dropLast(2)))
            guard StreamKind.all.contains(kind) else { return nil }
            self.pattern = pattern
        } else {
            guard Self.knownTypes.contains(pattern) else { return nil }
            self.pattern = pattern
        }
    }

    public var description: String { pattern }

    /// Every event type of every kind of stream.
    static let knownTypes: Set<String> = Set(EventType.allCases.map(\.rawValue))
        .union(SubscriptionEventType.allCases.map(\.rawValue))

    /// A comma-separated list (`order.*,subscription.*`), each selector checked; a failure names the first one refused.
    public static func parseList(_ text: String) -> Result<[WebhookEventSelector], InvalidSelector> {
        var selectors: [WebhookEventSelector] = []
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            let pattern = part.trimmingCharacters(in: .whitespaces)
            guard let selector = WebhookEventSelector(pattern) else { return .failure(InvalidSelector(pattern: pattern)) }
            if !selectors.contains(selector) { selectors.append(selector) }
        }
        return .success(selectors)
    }

    public struct InvalidSelector: Error, CustomStringConvertible {
        public let pattern: String
        public init(pattern: String) { self.pattern = pattern }
        public var description: String {
            "event selector '\(pattern)' is none of *, <kind>.* (order.*, subscription.*) or an event type such as order.granted"
        }
    }
}
