import Foundation
import X509

/// Verifies and decodes the App Store's signed messages: App Store Server Notifications V2 (`signedPayload`)
/// and StoreKit 2 / App Store Server API signed transactions and renewal infos.
///
/// For each JWS, in order: compact form; header `alg` is ES256; `x5c` holds three base64 DER certificates;
/// the payload's `signedDate` is not in the future (beyond `signedDateTolerance` of `now`); the chain
/// `x5c[0]` → `x5c[1]` → one of `trustedRoots` validates under RFC 5280 at `signedDate` (not the wall clock:
/// Apple re-sends old notifications, signed by certificates since expired), with Apple's intermediate and leaf
/// marker extensions; the ES256 signature over `header.payload` holds with the leaf's key. Only then is the
/// payload decoded and checked against the configured apps. `x5c[2]` is never trusted; only `trustedRoots`
/// (Apple Root CA - G3, loaded from configuration) anchor a chain. Certificate revocation (OCSP) is not
/// checked: that needs the network, and this type is pure.
public struct AppStoreJWSVerifier: Sendable {
    public let trustedRoots: [Certificate]
    public let apps: [AppStoreApp]
    /// How far past `now` a `signedDate` may lie (clock skew between Apple and this machine).
    public let signedDateTolerance: TimeInterval

    public init(trustedRoots: [Certificate], apps: [AppStoreApp], signedDateTolerance: TimeInterval = 300) {
        self.trustedRoots = trustedRoots
        self.apps = apps
        self.signedDateTolerance = signedDateTolerance
    }

    /// Verifies a notification's `signedPayload` and its nested transaction and renewal info.
    public func verifyNotification(_ signedPayload: String, now: Date)
        async throws(AppStoreVerificationError) -> AppStoreNotification
    {
        let jws = try await verifiedJWS(signedPayload, now: now)
        let wire = try AppStoreWire.decode(AppStoreWire.Notification.self, from: jws.payload)
        guard let data = wire.data ?? wire.summary else { throw .missingAppData }
        let environment = try AppStoreWire.environment(data.environment)
        let app = try checkApp(bundleId: data.bundleId, environment: environment)
        if environment == .production, app.appAppleId == nil || app.appAppleId != data.appAppleId {
            throw .appAppleIdMismatch(expected: app.appAppleId, found: data.appAppleId)
        }

        var transaction: AppStoreTransaction?
        if let signed = data.signedTransactionInfo {
            do throws(AppStoreVerificationError) {
                let nested = try await verifyTransaction(signed, now: now)
                guard nested.bundleId == data.bundleId else {
                    throw AppStoreVerificationError.nestedBundleIdMismatch(notification: data.bundleId, nested: nested.bundleId)
                }
                guard nested.environment == environment else {
                    throw AppStoreVerificationError.nestedEnvironmentMismatch(notification: environment, nested: nested.environment)
                }
                transaction = nested
            } catch { throw .inSignedTransactionInfo(error) }
        }

        var renewalInfo: AppStoreRenewalInfo?
        if let signed = data.signedRenewalInfo {
            do throws(AppStoreVerificationError) {
                let nested = try await verifyRenewalInfo(signed, now: now)
                guard nested.environment == environment else {
                    throw AppStoreVerificationError.nestedEnvironmentMismatch(notification: environment, nested: nested.environment)
                }
                renewalInfo = nested
            } catch { throw .inSignedRenewalInfo(error) }
        }

        return AppStoreNotification(
            notificationType: AppStoreNotificationType(rawValue: wire.notificationType), subtype: wire.subtype,
            notificationUUID: wire.notificationUUID, signedDate: AppStoreWire.date(milliseconds: wire.signedDate),
            version: wire.version, bundleId: data.bundleId, appAppleId: data.appAppleId, environment: environment,
            transaction: transaction, renewalInfo: renewalInfo, rawJWS: signedPayload)
    }

    /// Verifies a signed transaction (`JWSTransaction`), as a StoreKit 2 client sends it or nested in a notification.
    public func verifyTransaction(_ signedTransaction: String, now: Date)
        async throws(AppStoreVerificationError) -> AppStoreTransaction
    {
        let jws = try await verifiedJWS(signedTransaction, now: now)
        let wire = try AppStoreWire.decode(AppStoreWire.Transaction.self, from: jws.payload)
        let transaction = try AppStoreWire.transaction(wire, raw: signedTransaction)
        _ = try checkApp(bundleId: transaction.bundleId, environment: transaction.environment)
        return transaction
    }

    /// Verifies a signed renewal info (`JWSRenewalInfo`). It names no bundle id, so only its environment is
    /// checked here: accepted by at least one configured app (a notification also requires it to match).
    public func verifyRenewalInfo(_ signedRenewalInfo: String, now: Date)
        async throws(AppStoreVerificationError) -> AppStoreRenewalInfo
    {
        let jws = try await verifiedJWS(signedRenewalInfo, now: now)
        let wire = try AppStoreWire.decode(AppStoreWire.RenewalInfo.self, from: jws.payload)
        let info = try AppStoreWire.renewalInfo(wire, raw: signedRenewalInfo)
        guard apps.contains(where: { $0.accepts(info.environment) }) else {
            throw info.environment.isLocalTesting
                ? .localTestingEnvironmentRefused(info.environment) : .environmentNotAccepted(info.environment)
        }
        return info
    }

    /// The JWS checks shared by every message: form, alg, x5c, signedDate, chain, signature.
    func verifiedJWS(_ raw: String, now: Date) async throws(AppStoreVerificationError) -> CompactJWS {
        let jws = try CompactJWS(raw)
        let (leaf, intermediate) = try jws.certificates()
        let signedDate = try jws.signedDateMilliseconds()
        let validationTime = AppStoreWire.date(milliseconds: signedDate)
        guard validationTime.timeIntervalSince(now) <= signedDateTolerance else {
            throw .signedDateInTheFuture(signedDate: signedDate)
        }
        let chain = AppStoreCertificateChain(trustedRoots: trustedRoots)
        let validatedLeaf = try await chain.validate(leaf: leaf, intermediate: intermediate, at: validationTime)
        try jws.verifyES256(with: validatedLeaf)
        return jws
    }

    /// The configured app for `bundleId`, if it accepts `environment`.
    func checkApp(bundleId: String, environment: AppStoreEnvironment) throws(AppStoreVerificationError) -> AppStoreApp {
        guard let app = apps.first(where: { $0.bundleId == bundleId }) else { throw .unknownBundleId(bundleId) }
        guard app.accepts(environment) else {
            throw environment.isLocalTesting ? .localTestingEnvironmentRefused(environment) : .environmentNotAccepted(environment)
        }
        return app
    }
}
