import Foundation
import SwiftASN1
@_spi(FixedExpiryValidationTime) import X509

/// Validates an App Store JWS's `x5c` chain with swift-certificates' `Verifier` (RFC 5280 path building,
/// certificate signatures, basic constraints, validity) at the payload's `signedDate`, plus Apple's marker
/// extensions. Only `x5c[1]` is offered as an intermediate and only the configured roots anchor the chain:
/// `x5c[2]` is a hint and is never trusted.
///
/// Why not jwt-kit's `X5CVerifier`: its failures are one stringly `JWTError.invalidX5CChain(reason:)`, so the
/// caller could not name which check failed; its `signedDate` mode compares against the wall clock rather than an
/// injected `now`; and it takes the signature algorithm from the header (ES384, RS256, EdDSA ...) where Apple
/// only ever uses ES256. Doing the two steps here directly on swift-certificates and swift-crypto costs ~100 lines.
struct AppStoreCertificateChain: Sendable {
    /// Apple's "Apple WWDR intermediate" marker, required on `x5c[1]`.
    static let intermediateMarker: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 2, 1]
    /// Apple's "App Store receipt signing" marker, required on `x5c[0]`.
    static let leafMarker: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 11, 1]

    let trustedRoots: [Certificate]

    /// Validates leaf → intermediate → trusted root at `validationTime`; returns the validated leaf.
    func validate(leaf: Certificate, intermediate: Certificate, at validationTime: Date)
        async throws(AppStoreVerificationError) -> Certificate
    {
        var verifier = Verifier(rootCertificates: CertificateStore(trustedRoots)) {
            RFC5280Policy(fixedExpiryValidationTime: validationTime)
            AppleMarkerPolicy()
        }
        let result = await verifier.validate(leaf: leaf, intermediates: CertificateStore([intermediate]))
        switch result {
        case .validCertificate:
            return leaf
        case .couldNotValidate(let failures):
            // No failure recorded: no chain reached a trusted root (or a certificate signature did not hold).
            guard let failure = failures.first else { throw .untrustedChain }
            throw Self.diagnose(chain: Array(failure.chain), at: validationTime, reason: failure.policyFailureReason)
        }
    }

    /// Names the first rule a chain anchored at a trusted root breaks, in a fixed order.
    static func diagnose(chain: [Certificate], at time: Date, reason: PolicyFailureReason) -> AppStoreVerificationError {
        let positions: [AppStoreVerificationError.ChainPosition] = [.leaf, .intermediate, .root]
        for (certificate, position) in zip(chain, positions)
        where time < certificate.notValidBefore || time > certificate.notValidAfter {
            return .certificateNotValidAtSignedDate(position: position)
        }
        if chain.count >= 2, chain[1].extensions[oid: intermediateMarker] == nil { return .intermediateMissingAppleMarker }
        if let leaf = chain.first, leaf.extensions[oid: leafMarker] == nil { return .leafMissingAppleMarker }
        return .chainRejected(reason: reason.description)
    }
}

/// The App Store chain shape as a `VerifierPolicy`: exactly leaf, intermediate, root, with the intermediate and
/// leaf markers. It also declares the two markers handled, so a chain still builds if Apple marks them critical.
struct AppleMarkerPolicy: VerifierPolicy {
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = [
        AppStoreCertificateChain.intermediateMarker, AppStoreCertificateChain.leafMarker,
    ]

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) -> PolicyEvaluationResult {
        let certificates = Array(chain)
        guard certificates.count == 3 else {
            return .failsToMeetPolicy(reason: "App Store chain must be leaf, intermediate, root; got \(certificates.count)")
        }
        guard certificates[1].extensions[oid: AppStoreCertificateChain.intermediateMarker] != nil else {
            return .failsToMeetPolicy(reason: "intermediate lacks 1.2.840.113635.100.6.2.1")
        }
        guard certificates[0].extensions[oid: AppStoreCertificateChain.leafMarker] != nil else {
            return .failsToMeetPolicy(reason: "leaf lacks 1.2.840.113635.100.6.11.1")
        }
        return .meetsPolicy
    }
}
