import Crypto
import Foundation
import X509

/// A compact JWS (RFC 7515 §7.1) split into its parts, with the exact bytes its signature covers. Parsing is
/// kept apart from trusting: nothing here says the content is genuine.
struct CompactJWS: Sendable {
    /// The JWS as received, kept verbatim for the ledger's records.
    let raw: String
    /// ASCII `header.payload`: what the signature covers.
    let signingInput: [UInt8]
    let header: [UInt8]
    let payload: [UInt8]
    let signature: [UInt8]

    init(_ raw: String) throws(AppStoreVerificationError) {
        let segments = raw.split(separator: ".", omittingEmptySubsequences: false)
        guard segments.count == 3,
              let header = Base64Decoding.url(segments[0]), !header.isEmpty,
              let payload = Base64Decoding.url(segments[1]), !payload.isEmpty,
              let signature = Base64Decoding.url(segments[2])
        else { throw .malformedJWS }
        self.raw = raw
        self.signingInput = Array(segments[0].utf8) + [UInt8(ascii: ".")] + Array(segments[1].utf8)
        self.header = header
        self.payload = payload
        self.signature = signature
    }

    /// The header fields an App Store JWS uses.
    struct Header: Decodable {
        var alg: String?
        var x5c: [String]?
    }

    /// The one payload field needed before the signature can be checked: when it was signed.
    struct SignedDateOnly: Decodable {
        var signedDate: Int64
    }

    /// Checks `alg` and decodes `x5c` into leaf, intermediate and the (untrusted) root hint.
    func certificates() throws(AppStoreVerificationError) -> (leaf: Certificate, intermediate: Certificate) {
        let decoded: Header
        do { decoded = try JSONDecoder().decode(Header.self, from: Data(header)) } catch { throw .malformedHeader }
        guard decoded.alg == "ES256" else { throw .algorithmNotES256(found: decoded.alg) }
        guard let x5c = decoded.x5c else { throw .missingX5C }
        guard x5c.count == 3 else { throw .x5cNotThreeCertificates(count: x5c.count) }
        var certificates: [Certificate] = []
        for (index, entry) in x5c.enumerated() {
            guard let der = Base64Decoding.standard(entry) else { throw .malformedCertificate(index: index) }
            do { certificates.append(try Certificate(derEncoded: der)) } catch { throw .malformedCertificate(index: index) }
        }
        return (certificates[0], certificates[1])
    }

    /// `signedDate` in milliseconds since 1970.
    func signedDateMilliseconds() throws(AppStoreVerificationError) -> Int64 {
        do { return try JSONDecoder().decode(SignedDateOnly.self, from: Data(payload)).signedDate } catch {
            throw .missingSignedDate
        }
    }

    /// ES256: the 64-byte r‖s signature over `header.payload` with the leaf certificate's P-256 key.
    func verifyES256(with leaf: Certificate) throws(AppStoreVerificationError) {
        guard let key = P256.Signing.PublicKey(leaf.publicKey) else { throw .leafKeyNotP256 }
        guard signature.count == 64,
              let ecdsa = try? P256.Signing.ECDSASignature(rawRepresentation: signature),
              key.isValidSignature(ecdsa, for: signingInput)
        else { throw .signatureInvalid }
    }
}
