import Foundation
import ProviderTestSupport
import LedgerCore
import LedgerProviders
import Testing
import X509

/// The App Store JWS rules, one test per rule, each against a CA and signatures the test makes.
@Suite("App Store: signed notifications and transactions")
struct AppStoreJWSTests {
    typealias Kit = ProviderTestKit
    let ca: ProviderTestKit.CA
    init() throws { ca = try ProviderTestKit.CA() }

    func refusal(_ verify: () async throws(AppStoreVerificationError) -> some Any) async -> AppStoreVerificationError? {
        do { _ = try await verify(); return nil } catch { return error }
    }

    @Test func aValidNotificationWithItsNestedTransactionAndRenewalInfoIsDecoded() async throws {
        let transaction = try Kit.jws(payload: Kit.transactionPayload(), ca: ca)
        let renewal = try Kit.jws(payload: Kit.renewalPayload(), ca: ca)
        let signedPayload = try Kit.jws(
            payload: Kit.notificationPayload(signedTransactionInfo: transaction, signedRenewalInfo: renewal), ca: ca)
        let notification = try await Kit.verifier(trusting: ca).verifyNotification(signedPayload, now: Kit.now)
        #expect(notification.notificationType == .oneTimeCharge)
        #expect(notification.bundleId == Kit.bundleId)
        #expect(notification.appAppleId == Kit.appAppleId)
        #expect(notification.environment == .production)
        #expect(notification.rawJWS == signedPayload)
        #expect(notification.signedDate == Date(timeIntervalSince1970: TimeInterval(Kit.milliseconds(Kit.now)) / 1000))
        let decoded = try #require(notification.transaction)
        #expect(decoded.transactionId == "2000000123456789")
        #expect(decoded.originalTransactionId == "2000000123456700")
        #expect(decoded.price == 9990)
        #expect(decoded.currency == "USD")
        #expect(decoded.type == "Consumable")
        #expect(decoded.rawJWS == transaction)
        #expect(AppAccountToken.matches(decoded.appAccountToken, orderId: "order-1"))
        #expect(notification.renewalInfo?.autoRenewProductId == "com.example.monthly")
        #expect(notification.renewalInfo?.rawJWS == renewal)
    }

    @Test func aStandaloneSignedTransactionIsDecoded() async throws {
        var payload = Kit.transactionPayload(environment: "Sandbox")
        payload["revocationDate"] = Kit.milliseconds(Kit.now)
        payload["revocationReason"] = 1
        let transaction = try await Kit.verifier(trusting: ca).verifyTransaction(try Kit.jws(payload: payload, ca: ca), now: Kit.now)
        #expect(transaction.environment == .sandbox)
        #expect(transaction.revocationReason == 1)
        #expect(transaction.revocationDate != nil)
    }

    @Test func anUnknownNotificationTypeDecodesAsItsString() async throws {
        let signed = try Kit.jws(payload: Kit.notificationPayload(type: "SOMETHING_NEW"), ca: ca)
        let notification = try await Kit.verifier(trusting: ca).verifyNotification(signed, now: Kit.now)
        #expect(notification.notificationType.rawValue == "SOMETHING_NEW")
    }

    @Test func aSignatureOverATamperedPayloadIsRefused() async throws {
        let parts = try Kit.jws(payload: Kit.transactionPayload(), ca: ca).split(separator: ".")
        var payload = Kit.transactionPayload()
        payload["price"] = 1
        let tampered = "\(parts[0]).\(Kit.base64URL(try Kit.json(payload))).\(parts[2])"
        #expect(await refusal { () async throws(AppStoreVerificationError) in
            try await Kit.verifier(trusting: ca).verifyTransaction(tampered, now: Kit.now)
        } == .signatureInvalid)
    }

    @Test func aSignatureOverATamperedHeaderIsRefused() async throws {
        let parts = try Kit.jws(payload: Kit.transactionPayload(), ca: ca).split(separator: ".")
        let header: [String: Any] = ["alg": "ES256", "x5c": try ca.x5c(), "kid": "added"]
        let tampered = "\(Kit.base64URL(try Kit.json(header))).\(parts[1]).\(parts[2])"
        #expect(await refusal { () async throws(AppStoreVerificationError) in
            try await Kit.verifier(trusting: ca).verifyTransaction(tampered, now: Kit.now)
        } == .signatureInvalid)
    }

    @Test func anAlgorithmOtherThanES256IsRefused() async throws {
        let signed = try Kit.jws(payload: Kit.transactionPayload(), ca: ca, alg: "ES384")
        #expect(await refusal { () async throws(AppStoreVerificationError) in
            try await Kit.verifier(trusting: ca).verifyTransaction(signed, now: Kit.now)
        } == .algorithmNotES256(found: "ES384"))
    }

    @Test func anX5CWithoutThreeCertificatesIsRefused() async throws {
        let header: [String: Any] = ["alg": "ES256", "x5c": Array(try ca.x5c().prefix(2))]
        let signed = try Kit.jws(payload: Kit.transactionPayload(), header: header, key: ca.leafKey)
        #expect(await refusal { () async throws(AppStoreVerificationError) in
            try await Kit.verifier(trusting: ca).verifyTransaction(signed, now: Kit.now)
        } == .x5cNotThreeCertificates(count: 2))
    }

    @Test func aChainToAnUntrustedRootIsRefusedEvenWhenX5CCarriesThatRoot() async throws {
        let other = try Kit.CA(name: "Other")
        // Signed by the other CA's leaf, x5c[2] its own root: a perfectly consistent chain, to a root not configured.
        let signed = try Kit.jws(payload: Kit.transactionPayload(), ca: other)
        #expect(await refusal { () async throws(AppStoreVerificationError) in
            try await Kit.verifier(trusting: ca).verifyTransaction(signed, now: Kit.now)
        } == .untrustedChain)
    }

    @Test func aTrustedRootInX5CDoesNotAnchorAChainItDidNotSign() async throws {
        let other = try Kit.CA(name: "Other")
        // The hint names the trusted root, but the other CA's intermediate was not issued by it.
        let signed = try Kit.jws(payload: Kit.transactionPayload(), ca: other, rootHint: ca.root)
        #expect(await refusal { () async throws(AppStoreVerificationError) in
            try await Kit.verifier(trusting: ca).verifyTransaction(signed, now: Kit.now)
        } == .untrustedChain)
    }

    @Test func anIntermediateWithoutAppleMarkerIsRefused() async throws {
        let unmarked = try Kit.CA(intermediateMarker: false)
        let signed = try Kit.jws(payload: Kit.transactionPayload(), ca: unmarked)
        #expect(await refusal { () async throws(AppStoreVerificationError) in
            try await Kit.verifier(trusting: unmarked).verifyTransaction(signed, now: Kit.now)
        } == .intermediateMissingAppleMarker)
    }

    @Test func aLeafWithoutAppleMarkerIsRefused() async throws {
        let unmarked = try Kit.CA(leafMarker: false)
        let signed = try Kit.jws(payload: Kit.transactionPayload(), ca: unmarked)
        #expect(await refusal { () async throws(AppStoreVerificationError) in
            try await Kit.verifier(trusting: unmarked).verifyTransaction(signed, now: Kit.now)
        } == .leafMissingAppleMarker)
    }

    @Test func aLeafExpiredAtSignedDateIsRefused() async throws {
        // Valid until 10 days before now; signed 1 day before now.
        let expired = try Kit.CA(leafValidity: Kit.now.addingTimeInterval(-300 * Kit.day)...Kit.now.addingTimeInterval(-10 * Kit.day))
        let signed = try Kit.jws(payload: Kit.transactionPayload(signedDate: Kit.now.addingTimeInterval(-Kit.day)), ca: expired)
        #expect(await refusal { () async throws(AppStoreVerificationError) in
            try await Kit.verifier(trusting: expired).verifyTransaction(signed, now: Kit.now)
        } == .certificateNotValidAtSignedDate(position: .leaf))
    }

    @Test func aLeafExpiredNowButValidAtSignedDateIsAccepted() async throws {
        let expired = try Kit.CA(leafValidity: Kit.now.addingTimeInterval(-300 * Kit.day)...Kit.now.addingTimeInterval(-10 * Kit.day))
        let signed = try Kit.jws(payload: Kit.transactionPayload(signedDate: Kit.now.addingTimeInterval(-20 * Kit.day)), ca: expired)
        let transaction = try await Kit.verifier(trusting: expired).verifyTransaction(signed, now: Kit.now)
        #expect(transaction.rawJWS == signed)
    }

    @Test func aSignedDateInTheFutureIsRefused() async throws {
        let signedDate = Kit.now.addingTimeInterval(600)
        let signed = try Kit.jws(payload: Kit.transactionPayload(signedDate: signedDate), ca: ca)
        #expect(await refusal { () async throws(AppStoreVerificationError) in
            try await Kit.verifier(trusting: ca).verifyTransaction(signed, now: Kit.now)
        } == .signedDateInTheFuture(signedDate: Kit.milliseconds(signedDate)))
    }

    @Test func aWrongBundleIdIsRefused() async throws {
        let signed = try Kit.jws(payload: Kit.notificationPayload(bundleId: "com.example.other"), ca: ca)
        #expect(await refusal { () async throws(AppStoreVerificationError) in
            try await Kit.verifier(trusting: ca).verifyNotification(signed, now: Kit.now)
        } == .unknownBundleId("com.example.other"))
    }

    @Test func anEnvironmentTheAppDoesNotAcceptIsRefused() async throws {
        let productionOnly = [AppStoreApp(bundleId: Kit.bundleId, appAppleId: Kit.appAppleId, environments: [.production])]
        let signed = try Kit.jws(payload: Kit.notificationPayload(environment: "Sandbox"), ca: ca)
        #expect(await refusal { () async throws(AppStoreVerificationError) in
            try await Kit.verifier(trusting: ca, apps: productionOnly).verifyNotification(signed, now: Kit.now)
        } == .environmentNotAccepted(.sandbox))
    }

    @Test func theXcodeEnvironmentIsRefusedByDefault() async throws {
        let signed = try Kit.jws(payload: Kit.transactionPayload(environment: "Xcode"), ca: ca)
        #expect(await refusal { () async throws(AppStoreVerificationError) in
            try await Kit.verifier(trusting: ca).verifyTransaction(signed, now: Kit.now)
        } == .localTestingEnvironmentRefused(.xcode))
        let allowing = [AppStoreApp(bundleId: Kit.bundleId, appAppleId: nil, environments: [], allowXcode: true)]
        let accepted = try await Kit.verifier(trusting: ca, apps: allowing).verifyTransaction(signed, now: Kit.now)
        #expect(accepted.environment == .xcode)
    }

    @Test func aProductionNotificationForAnotherAppAppleIdIsRefused() async throws {
        let signed = try Kit.jws(payload: Kit.notificationPayload(appAppleId: 42), ca: ca)
        #expect(await refusal { () async throws(AppStoreVerificationError) in
            try await Kit.verifier(trusting: ca).verifyNotification(signed, now: Kit.now)
        } == .appAppleIdMismatch(expected: Kit.appAppleId, found: 42))
    }

    @Test func aTamperedNestedTransactionIsRefusedAsSuch() async throws {
        let parts = try Kit.jws(payload: Kit.transactionPayload(), ca: ca).split(separator: ".")
        var payload = Kit.transactionPayload()
        payload["productId"] = "com.example.coins.10000"
        let tampered = "\(parts[0]).\(Kit.base64URL(try Kit.json(payload))).\(parts[2])"
        let signed = try Kit.jws(payload: Kit.notificationPayload(signedTransactionInfo: tampered), ca: ca)
        #expect(await refusal { () async throws(AppStoreVerificationError) in
            try await Kit.verifier(trusting: ca).verifyNotification(signed, now: Kit.now)
        } == .inSignedTransactionInfo(.signatureInvalid))
    }

    @Test func aNestedTransactionFromAnotherEnvironmentIsRefused() async throws {
        let transaction = try Kit.jws(payload: Kit.transactionPayload(environment: "Sandbox"), ca: ca)
        let signed = try Kit.jws(payload: Kit.notificationPayload(signedTransactionInfo: transaction), ca: ca)
        #expect(await refusal { () async throws(AppStoreVerificationError) in
            try await Kit.verifier(trusting: ca).verifyNotification(signed, now: Kit.now)
        } == .inSignedTransactionInfo(.nestedEnvironmentMismatch(notification: .production, nested: .sandbox)))
    }

    @Test func aNestedTransactionOfAnotherConfiguredAppIsRefused() async throws {
        let apps = [
            AppStoreApp(bundleId: Kit.bundleId, appAppleId: Kit.appAppleId, environments: [.production]),
            AppStoreApp(bundleId: "com.example.other", appAppleId: 42, environments: [.production]),
        ]
        let transaction = try Kit.jws(payload: Kit.transactionPayload(bundleId: "com.example.other"), ca: ca)
        let signed = try Kit.jws(payload: Kit.notificationPayload(signedTransactionInfo: transaction), ca: ca)
        #expect(await refusal { () async throws(AppStoreVerificationError) in
            try await Kit.verifier(trusting: ca, apps: apps).verifyNotification(signed, now: Kit.now)
        } == .inSignedTransactionInfo(.nestedBundleIdMismatch(notification: Kit.bundleId, nested: "com.example.other")))
    }

    @Test func malformedInputIsRefusedNotTrapped() async throws {
        let verifier = Kit.verifier(trusting: ca)
        for input in ["", "a.b", "...", "a.b.c.d", "!!.??.**", "e30.e30.", "e30.e30.e30"] {
            let error = await refusal { () async throws(AppStoreVerificationError) in
                try await verifier.verifyTransaction(input, now: Kit.now)
            }
            #expect(error != nil, "\(input)")
        }
    }

    @Test func theAppAccountTokenIsTheUUIDv5OfTheOrderIdInTheLedgerNamespace() {
        // Computed independently: Python's uuid.uuid5(UUID("6f1c3a52-9e0b-4d6e-8a47-2b5d0c9e7f13"), "order-1").
        #expect(AppAccountToken.forOrderId("order-1").uuidString.lowercased() == "ac611565-7e47-5acf-a5d1-e8541cf37759")
        #expect(AppAccountToken.namespace.uuidString.lowercased() == "6f1c3a52-9e0b-4d6e-8a47-2b5d0c9e7f13")
        #expect(!AppAccountToken.matches(AppAccountToken.forOrderId("order-2"), orderId: "order-1"))
    }
}
