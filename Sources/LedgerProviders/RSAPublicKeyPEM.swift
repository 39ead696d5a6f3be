import Foundation
import X509
import _CryptoExtras

/// Reads the RSA keys the Chinese providers hand out, in the forms they hand them out: a `PUBLIC KEY` PEM, an
/// `RSA PUBLIC KEY` PEM, an X.509 `CERTIFICATE` PEM (WeChat Pay platform certificates), or Alipay's bare base64
/// SubjectPublicKeyInfo as pasted from its console. One reader so the configuration accepts the same forms everywhere.
public enum RSAPublicKeyPEM {
    public enum Failure: Error, Equatable {
        case notAnRSAPublicKey
    }

    public static func parse(_ text: String) throws(Failure) -> _RSA.Signing.PublicKey {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        do {
            if trimmed.hasPrefix("-----BEGIN CERTIFICATE-----") {
                let certificate = try Certificate(pemEncoded: trimmed)
                guard let key = _RSA.Signing.PublicKey(certificate.publicKey) else { throw Failure.notAnRSAPublicKey }
                return key
            }
            if trimmed.hasPrefix("-----BEGIN") {
                return try _RSA.Signing.PublicKey(pemRepresentation: trimmed)
            }
            let compact = trimmed.filter { !$0.isWhitespace }
            guard let der = Base64Decoding.standard(compact) else { throw Failure.notAnRSAPublicKey }
            return try _RSA.Signing.PublicKey(derRepresentation: der)
        } catch {
            throw .notAnRSAPublicKey
        }
    }
}
