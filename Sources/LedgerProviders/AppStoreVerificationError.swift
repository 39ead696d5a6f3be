/// Why an App Store signed message was refused. Each case names exactly one check, so the HTTP layer can answer
/// 4xx with it and the security log can tell a forgery (signature, chain) from a misconfiguration (bundle id,
/// environment) or a malformed message.
public indirect enum AppStoreVerificationError: Error, Sendable, Hashable, CustomStringConvertible {
    // The compact JWS itself.
    /// Not three base64url segments separated by dots.
    case malformedJWS
    /// The header segment is not a JSON object.
    case malformedHeader
    /// The header's `alg` is not `ES256` (nil: absent).
    case algorithmNotES256(found: String?)
    /// The header has no `x5c`.
    case missingX5C
    /// `x5c` does not hold exactly three certificates (leaf, intermediate, root).
    case x5cNotThreeCertificates(count: Int)
    /// `x5c[index]` is not base64 DER of an X.509 certificate.
    case malformedCertificate(index: Int)
    /// The payload has no integer `signedDate` (milliseconds since 1970), needed to judge the chain.
    case missingSignedDate
    /// `signedDate` lies further in the future than the verifier's tolerance allows.
    case signedDateInTheFuture(signedDate: Int64)

    // The certificate chain, judged at `signedDate`.
    /// No chain from `x5c[0]` via `x5c[1]` to a configured trusted root, with valid certificate signatures.
    case untrustedChain
    /// A chain to a trusted root exists, but the certificate at `position` was not valid at `signedDate`.
    case certificateNotValidAtSignedDate(position: ChainPosition)
    /// The intermediate lacks Apple's marker extension 1.2.840.113635.100.6.2.1.
    case intermediateMissingAppleMarker
    /// The leaf lacks Apple's marker extension 1.2.840.113635.100.6.11.1.
    case leafMissingAppleMarker
    /// A chain to a trusted root exists but fails another RFC 5280 rule (basic constraints, version, ...).
    case chainRejected(reason: String)

    // The signature.
    /// The leaf's key is not a P-256 key.
    case leafKeyNotP256
    /// The signature is not 64 bytes (r‖s) or does not verify over `header.payload` with the leaf's key.
    case signatureInvalid

    // The payload, once its signature holds.
    /// The payload does not decode; `field` names where (dotted path).
    case malformedPayload(field: String)
    /// `environment` is not one of Production, Sandbox, Xcode, LocalTesting.
    case unknownEnvironment(String)

    // The app checks.
    /// No configured app has this bundle id.
    case unknownBundleId(String)
    /// The app is not configured to accept this environment.
    case environmentNotAccepted(AppStoreEnvironment)
    /// An `Xcode`/`LocalTesting` message for an app without `allowXcode`.
    case localTestingEnvironmentRefused(AppStoreEnvironment)
    /// A Production notification whose `appAppleId` is not the configured one (nil: absent / not configured).
    case appAppleIdMismatch(expected: Int64?, found: Int64?)
    /// A notification without `data` or `summary`, so without a bundle id or environment to check.
    case missingAppData
    /// The nested transaction or renewal info names another bundle id than its notification.
    case nestedBundleIdMismatch(notification: String, nested: String)
    /// The nested transaction or renewal info names another environment than its notification.
    case nestedEnvironmentMismatch(notification: AppStoreEnvironment, nested: AppStoreEnvironment)

    // Nested JWS.
    /// The notification's `data.signedTransactionInfo` failed the wrapped check.
    case inSignedTransactionInfo(AppStoreVerificationError)
    /// The notification's `data.signedRenewalInfo` failed the wrapped check.
    case inSignedRenewalInfo(AppStoreVerificationError)

    /// Where in `x5c` a certificate sits.
    public enum ChainPosition: String, Sendable, Hashable {
        case leaf, intermediate, root
    }

    public var description: String {
        switch self {
        case .malformedJWS: "malformed_jws"
        case .malformedHeader: "malformed_header"
        case .algorithmNotES256(let found): "algorithm_not_es256 (\(found ?? "absent"))"
        case .missingX5C: "missing_x5c"
        case .x5cNotThreeCertificates(let count): "x5c_not_three_certificates (\(count))"
        case .malformedCertificate(let index): "malformed_certificate (x5c[\(index)])"
        case .missingSignedDate: "missing_signed_date"
        case .signedDateInTheFuture(let date): "signed_date_in_the_future (\(date))"
        case .untrustedChain: "untrusted_chain"
        case .certificateNotValidAtSignedDate(let position): "certificate_not_valid_at_signed_date (\(position.rawValue))"
        case .intermediateMissingAppleMarker: "intermediate_missing_apple_marker"
        case .leafMissingAppleMarker: "leaf_missing_apple_marker"
        case .chainRejected(let reason): "chain_rejected (\(reason))"
        case .leafKeyNotP256: "leaf_key_not_p256"
        case .signatureInvalid: "signature_invalid"
        case .malformedPayload(let field): "malformed_payload (\(field))"
        case .unknownEnvironment(let environment): "unknown_environment (\(environment))"
        case .unknownBundleId(let bundleId): "unknown_bundle_id (\(bundleId))"
        case .environmentNotAccepted(let environment): "environment_not_accepted (\(environment.rawValue))"
        case .localTestingEnvironmentRefused(let environment): "local_testing_environment_refused (\(environment.rawValue))"
        case .appAppleIdMismatch(let expected, let found):
            "app_apple_id_mismatch (expected \(expected.map(String.init) ?? "none"), found \(found.map(String.init) ?? "none"))"
        case .missingAppData: "missing_app_data"
        case .nestedBundleIdMismatch(let notification, let nested): "nested_bundle_id_mismatch (\(notification) vs \(nested))"
        case .nestedEnvironmentMismatch(let notification, let nested):
            "nested_environment_mismatch (\(notification.rawValue) vs \(nested.rawValue))"
        case .inSignedTransactionInfo(let inner): "signed_transaction_info: \(inner)"
        case .inSignedRenewalInfo(let inner): "signed_renewal_info: \(inner)"
        }
    }
}
