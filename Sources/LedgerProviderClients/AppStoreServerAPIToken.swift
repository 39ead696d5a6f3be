import Crypto
import Foundation

/// The bearer token of one App Store Server API request: a JWT signed ES256 with the In-App Purchase key
/// (header `alg` ES256, `kid` the key id, `typ` JWT; claims `iss` the issuer id, `iat`, `exp` at most 5 minutes
/// later, `aud` appstoreconnect-v1, `bid` the bundle id). A new one per request, so none outlives its request.
public struct AppStoreServerAPIKey: Sendable {
    public let keyId: String
    public let issuerId: String
    public let bundleId: String
    let privateKey: P256.Signing.PrivateKey

    /// How long a token is valid: Apple refuses one whose `exp` is more than an hour away; five minutes is plenty.
    static let lifetime: TimeInterval = 300

    public init(keyId: String, issuerId: String, bundleId: String, privateKey: P256.Signing.PrivateKey) {
        self.keyId = keyId
        self.issuerId = issuerId
        self.bundleId = bundleId
        self.privateKey = privateKey
    }

    /// Reads the `.p8` file's PEM (PKCS#8, P-256); nil when it is not such a key.
    public static func privateKey(pem: String) -> P256.Signing.PrivateKey? {
        try? P256.Signing.PrivateKey(pemRepresentation: pem)
    }

    /// A token issued at `now`.
    public func token(now: Date) throws -> String {
        let header = ["alg": "ES256", "kid": keyId, "typ": "JWT"]
        let issued = Int64(now.timeIntervalSince1970)
        let claims: [String: any Sendable] = [
            "iss": issuerId, "iat": issued, "exp": issued + Int64(Self.lifetime), "aud": "appstoreconnect-v1", "bid": bundleId,
        ]
        let signingInput = Self.base64URL(try Self.json(header)) + "." + Self.base64URL(try Self.json(claims))
        let signature = try privateKey.signature(for: Data(signingInput.utf8))
        return signingInput + "." + Self.base64URL(signature.rawRepresentation)
    }

    static func json(_ object: [String: any Sendable]) throws -> Data {
        try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
    }

    static func base64URL(_ data: some DataProtocol) -> String {
        Data(data).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }
}
