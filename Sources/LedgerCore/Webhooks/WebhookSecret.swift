import Crypto
import Foundation

/// A webhook endpoint's signing secret, written as the Standard Webhooks convention writes it: `whsec_` and the key in
/// base64. The ledger makes 32 random bytes; it shows the text once, to whoever added the endpoint or rotated its
/// secret, and never again (its `description` hides it, so a log line or an error cannot carry it).
public struct WebhookSecret: Sendable, Hashable, CustomStringConvertible {
    public let key: [UInt8]

    public static let prefix = "whsec_"

    /// A new secret of 32 random bytes.
    public static func generate() -> WebhookSecret {
        WebhookSecret(key: SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) })
    }

    public init(key: [UInt8]) {
        self.key = key
    }

    /// `whsec_<base64>`; nil when it is not that, or its key is shorter than 24 bytes (the convention's floor).
    public init?(_ text: String) {
        guard text.hasPrefix(Self.prefix), let data = Data(base64Encoded: String(text.dropFirst(Self.prefix.count))),
              data.count >= 24
        else { return nil }
        key = Array(data)
    }

    /// `whsec_<base64>`: the one time it is shown.
    public var text: String { Self.prefix + Data(key).base64EncodedString() }

    public var description: String { "whsec_…" }
}
