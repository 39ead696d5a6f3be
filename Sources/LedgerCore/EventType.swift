/// The names of the facts an order's stream can hold, as they appear in the API and in the event store.
public enum EventType: String, Sendable, Hashable, Codable, CaseIterable {
    case orderCreated = "order.created"
    case paymentQueued = "payment.queued"
    case receiptReceived = "receipt.received"
    case receiptVerified = "receipt.verified"
    case verificationFailed = "verification.failed"
    case orderGranted = "order.granted"
    case orderFinished = "order.finished"
    case orderCancelled = "order.cancelled"
    case orderRefunded = "order.refunded"
    case refundReversed = "order.refund_reversed"
    /// A payment provider's own signed message, verified by the ledger (never posted by a client).
    case providerNotified = "provider.notified"

    /// By one hash of `rawValue`: the synthesised initialiser compared it with each name in turn, which cost a
    /// fold 700 instructions an event (every stored event's type is read through here).
    public init?(rawValue: String) {
        guard let type = Self.byName[rawValue] else { return nil }
        self = type
    }

    private static let byName = Dictionary(allCases.map { ($0.rawValue, $0) }, uniquingKeysWith: { first, _ in first })
}
