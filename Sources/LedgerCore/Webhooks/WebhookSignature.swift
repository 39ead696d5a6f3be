import Crypto
import Foundation

/// Signs a delivery by the Standard Webhooks convention (standardwebhooks.com), so that a receiver can check it with
/// that convention's libraries: HMAC-SHA256 with the secret's key over `{webhook-id}.{webhook-timestamp}.{body}`, in
/// base64, as `v1,<signature>`; one per secret, space-separated, while a secret is being rotated.
public enum WebhookSignature {
    /// The `webhook-signature` header for `body` sent as message `id` at `timestamp` (Unix seconds).
    public static func header(id: String, timestamp: Int64, body: [UInt8], secrets: [WebhookSecret]) -> String {
        let signed = Array("\(id).\(timestamp).".utf8) + body
        return secrets.map { secret in
            let mac = HMAC<SHA256>.authenticationCode(for: signed, using: SymmetricKey(data: secret.key))
            return "v1," + Data(mac).base64EncodedString()
        }.joined(separator: " ")
    }
}
