import Foundation
import LedgerCore

/// A stream's state folded from its events, one after another from its first, as its reads show it: an order, or a
/// subscription at a moment. A kind this build does not know folds to nothing.
struct StreamState {
    private var order: Order?
    private var subscription: Subscription?

    mutating func add(_ stored: StoredEvent) throws {
        let data = Array(stored.data.canonicalJSON.utf8)
        switch stored.stream.kind {
        case .order:
            order = OrderStream.evolve(
                order, try OrderStream.storedEvent(type: stored.type, dataText: data), stream: stored.stream.id,
                version: stored.version, recordedAt: stored.recordedAt)
        case .subscription:
            subscription = SubscriptionStream.evolve(
                subscription, try SubscriptionStream.storedEvent(type: stored.type, dataText: data), stream: stored.stream.id,
                version: stored.version, recordedAt: stored.recordedAt)
        default:
            break
        }
    }

    /// The state as the API shows it (a subscription as at `moment`); nil before any event, or for an unknown kind.
    func json(at moment: Date) -> JSONValue? {
        order?.json ?? subscription?.json(at: moment)
    }
}
