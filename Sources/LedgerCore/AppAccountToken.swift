import Foundation

/// The `appAccountToken` a client sets on a StoreKit 2 purchase (`Product.PurchaseOption.appAccountToken`) so
/// that the signed transaction names the ledger's order: Apple returns the UUID untouched in every transaction
/// and notification, inside the signed payload.
///
/// An App Store order created without a token has this one (`OrderDecider.evolve`), so a notification finds the
/// order even when the client derived the token but never posted it.
///
/// Derivation (a client must do exactly this): the name-based UUID version 5 (RFC 9562 §5.5, SHA-1) of the
/// order id's UTF-8 bytes in the namespace ``namespace`` (`6f1c3a52-9e0b-4d6e-8a47-2b5d0c9e7f13`). Always, also
/// when the order id looks like a UUID, so there is one rule. Example: order id `order-1` →
/// `AppAccountToken.forOrderId("order-1")` (the value is pinned by a test and in docs/providers.md).
public enum AppAccountToken {
    /// The ledger's fixed namespace for order ids. Never change it: tokens already in transactions would no
    /// longer match their orders.
    public static let namespace = UUID(uuid: (
        0x6f, 0x1c, 0x3a, 0x52, 0x9e, 0x0b, 0x4d, 0x6e, 0x8a, 0x47, 0x2b, 0x5d, 0x0c, 0x9e, 0x7f, 0x13))

    /// The UUID v5 of `orderId` in ``namespace``.
    public static func forOrderId(_ orderId: String) -> UUID {
        NameBasedUUID.version5(namespace: namespace, name: orderId)
    }

    /// Whether `token` (from a verified transaction) is the one derived from `orderId`.
    public static func matches(_ token: UUID?, orderId: String) -> Bool {
        token == forOrderId(orderId)
    }
}
