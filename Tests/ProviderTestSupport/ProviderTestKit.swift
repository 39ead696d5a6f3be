import Crypto
import Foundation
import LedgerCore
import LedgerProviders
import SwiftASN1
import X509
import _CryptoExtras

/// Everything the provider tests sign with, made here from fresh keys: an App Store-shaped CA (root,
/// intermediate with Apple's marker, leaf with Apple's marker), an ES256 JWS signer, Alipay's RSA2 signer and
/// WeChat Pay's RSA signer and AES-GCM resource encryptor. No fixture comes from elsewhere; a later HTTP test
/// target can copy this file and post what it makes.
public enum ProviderTestKit {
    /// A fixed "now" so certificate windows and timestamps are deterministic.
    public static let now = Date(timeIntervalSince1970: 1_800_000_000)
    public static let day: TimeInterval = 86_400

    public static func milliseconds(_ date: Date) -> Int64 { Int64(date.timeIntervalSince1970 * 1000) }

    // MARK: App Store CA

    /// A root, an intermediate and a leaf, as Apple's App Store signing chain is shaped.
    public struct CA: Sendable {
        public let rootKey = P256.Signing.PrivateKey()
        public let intermediateKey = P256.Signing.PrivateKey()
        public let leafKey = P256.Signing.PrivateKey()
        public let root: Certificate
        public let intermediate: Certificate
        public let leaf: Certificate

        /// - Parameters: the markers to include, and the leaf's validity window (default: a year either side of `now`).
        public init(name: String = "Test", intermediateMarker: Bool = true, leafMarker: Bool = true,
             leafValidity: ClosedRange<Date>? = nil) throws {
            let validity = now.addingTimeInterval(-365 * day)...now.addingTimeInterval(365 * day)
            let rootName = try DistinguishedName { CommonName("\(name) Root CA") }
            let intermediateName = try DistinguishedName { CommonName("\(name) WWDR Intermediate") }
            let leafName = try DistinguishedName { CommonName("\(name) App Store Signing") }
            root = try makeCertificate(
                key: rootKey.publicKey, subject: rootName, issuer: rootName, issuerKey: rootKey, validity: validity,
                extensions: Certificate.Extensions {
                    Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                    KeyUsage(keyCertSign: true)
                })
            intermediate = try makeCertificate(
                key: intermediateKey.publicKey, subject: intermediateName, issuer: rootName, issuerKey: rootKey,
                validity: validity,
                extensions: Certificate.Extensions {
                    Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                    KeyUsage(keyCertSign: true)
                    if intermediateMarker { ProviderTestKit.marker([1, 2, 840, 113635, 100, 6, 2, 1]) }
                })
            leaf = try makeCertificate(
                key: leafKey.publicKey, subject: leafName, issuer: intermediateName, issuerKey: intermediateKey,
                validity: leafValidity ?? validity,
                extensions: Certificate.Extensions {
                    Critical(BasicConstraints.notCertificateAuthority)
                    KeyUsage(digitalSignature: true)
                    if leafMarker { ProviderTestKit.marker([1, 2, 840, 113635, 100, 6, 11, 1]) }
                })
        }

        /// `x5c` as Apple sends it: leaf, intermediate, root, each base64 DER.
        public func x5c(root hint: Certificate? = nil) throws -> [String] {
            try [leaf, intermediate, hint ?? root].map { try ProviderTestKit.der($0).base64EncodedString() }
        }
    }

    /// An Apple marker extension: non-critical, value DER NULL (as Apple's are).
    public static func marker(_ oid: ASN1ObjectIdentifier) -> Certificate.Extension {
        Certificate.Extension(oid: oid, critical: false, value: [0x05, 0x00])
    }

    public static func makeCertificate(
        key: P256.Signing.PublicKey, subject: DistinguishedName, issuer: DistinguishedName,
        issuerKey: P256.Signing.PrivateKey, validity: ClosedRange<Date>, extensions: Certificate.Extensions
    ) throws -> Certificate {
        try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: Certificate.PublicKey(key),
            notValidBefore: validity.lowerBound, notValidAfter: validity.upperBound, issuer: issuer, subject: subject,
            signatureAlgorithm: .ecdsaWithSHA256, extensions: extensions,
            issuerPrivateKey: Certificate.PrivateKey(issuerKey))
    }

    public static func der(_ certificate: Certificate) throws -> Data {
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        return Data(serializer.serializedBytes)
    }

    // MARK: ES256 JWS

    public static func base64URL(_ bytes: some DataProtocol) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    public static func json(_ object: [String: Any]) throws -> Data {
        try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
    }

    /// A compact JWS of `payload`, signed ES256 by `key` (default: the CA's leaf), with `header` as given.
    public static func jws(payload: [String: Any], header: [String: Any], key: P256.Signing.PrivateKey) throws -> String {
        let signingInput = base64URL(try json(header)) + "." + base64URL(try json(payload))
        let signature = try key.signature(for: Data(signingInput.utf8))
        return signingInput + "." + base64URL(signature.rawRepresentation)
    }

    public static func jws(payload: [String: Any], ca: CA, alg: String = "ES256", rootHint: Certificate? = nil) throws -> String {
        try jws(payload: payload, header: ["alg": alg, "x5c": try ca.x5c(root: rootHint)], key: ca.leafKey)
    }

    public static let bundleId = "com.example.ledger"
    public static let appAppleId: Int64 = 1_234_567_890

    public static func transactionPayload(environment: String = "Production", bundleId: String = bundleId,
                                   signedDate: Date = now) -> [String: Any] {
        [
            "transactionId": "2000000123456789", "originalTransactionId": "2000000123456700",
            "appAccountToken": AppAccountToken.forOrderId("order-1").uuidString.lowercased(),
            "productId": "com.example.coins.100", "bundleId": bundleId,
            "purchaseDate": milliseconds(now.addingTimeInterval(-60)), "price": 9990, "currency": "USD",
            "environment": environment, "signedDate": milliseconds(signedDate), "type": "Consumable",
            "quantity": 1, "storefront": "USA", "transactionReason": "PURCHASE", "inAppOwnershipType": "PURCHASED",
        ]
    }

    public static func renewalPayload(environment: String = "Production") -> [String: Any] {
        [
            "originalTransactionId": "2000000123456700", "autoRenewProductId": "com.example.monthly",
            "productId": "com.example.monthly", "autoRenewStatus": 1, "environment": environment,
            "signedDate": milliseconds(now), "renewalDate": milliseconds(now.addingTimeInterval(30 * day)),
        ]
    }

    public static func notificationPayload(type: String = "ONE_TIME_CHARGE", environment: String = "Production",
                                    bundleId: String = bundleId, appAppleId: Int64? = appAppleId,
                                    signedTransactionInfo: String? = nil, signedRenewalInfo: String? = nil,
                                    signedDate: Date = now) -> [String: Any] {
        var data: [String: Any] = ["bundleId": bundleId, "environment": environment, "bundleVersion": "1"]
        if let appAppleId { data["appAppleId"] = appAppleId }
        if let signedTransactionInfo { data["signedTransactionInfo"] = signedTransactionInfo }
        if let signedRenewalInfo { data["signedRenewalInfo"] = signedRenewalInfo }
        return [
            "notificationType": type, "notificationUUID": "5d2b3a1e-0000-4000-8000-000000000001",
            "version": "2.0", "signedDate": milliseconds(signedDate), "data": data,
        ]
    }

    public static func verifier(trusting ca: CA, apps: [AppStoreApp]? = nil) -> AppStoreJWSVerifier {
        AppStoreJWSVerifier(
            trustedRoots: [ca.root],
            apps: apps ?? [AppStoreApp(bundleId: bundleId, appAppleId: appAppleId, environments: [.production, .sandbox])])
    }

    // MARK: RSA (Alipay, WeChat Pay)

    /// 2048-bit keys take a moment to make: made once per test process.
    public static let alipayKey = try! _RSA.Signing.PrivateKey(keySize: .bits2048)
    public static let otherRSAKey = try! _RSA.Signing.PrivateKey(keySize: .bits2048)
    public static let wechatPlatformKey = try! _RSA.Signing.PrivateKey(keySize: .bits2048)

    public static func rsaSign(_ bytes: [UInt8], with key: _RSA.Signing.PrivateKey) throws -> String {
        try key.signature(for: SHA256.hash(data: bytes), padding: .insecurePKCS1v1_5).rawRepresentation.base64EncodedString()
    }

    // MARK: Alipay

    public static let alipayAppId = "2021000000000001"

    /// `alipayParameters` with the values of `changes` in place of the defaults (by parameter name).
    public static func alipayParameters(_ changes: [String: String], totalAmount: String = "12.34") -> [(String, String)] {
        alipayParameters(totalAmount: totalAmount).map { name, value in (name, changes[name] ?? value) }
    }

    public static func alipayParameters(totalAmount: String = "12.34") -> [(String, String)] {
        [
            ("notify_time", "2026-05-01 12:00:05"), ("notify_type", "trade_status_sync"),
            ("notify_id", "ac05099524730693a8b330c5ecf72da9786"), ("charset", "utf-8"), ("version", "1.0"),
            ("app_id", alipayAppId), ("out_trade_no", "order-1"), ("trade_no", "2026050122001400001234567890"),
            ("trade_status", "TRADE_SUCCESS"), ("total_amount", totalAmount), ("receipt_amount", totalAmount),
            ("subject", "金币 100 + bonus"), ("gmt_create", "2026-05-01 11:59:58"), ("gmt_payment", "2026-05-01 12:00:04"),
            ("seller_id", "2088000000000001"), ("buyer_logon_id", ""),
        ]
    }

    /// Alipay's signed content, written out from its documentation independently of the code under test.
    public static func alipaySignedContent(_ parameters: [(String, String)]) -> String {
        parameters.filter { $0.0 != "sign" && $0.0 != "sign_type" && !$0.1.isEmpty }
            .sorted { Array($0.0.utf8).lexicographicallyPrecedes(Array($1.0.utf8)) }
            .map { "\($0.0)=\($0.1)" }.joined(separator: "&")
    }

    public static func formEncode(_ parameters: [(String, String)]) -> [UInt8] {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return Array(parameters.map { key, value in
            "\(key)=\(value.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")"
        }.joined(separator: "&").utf8)
    }

    /// A body signed over `signed` (default: the parameters sent), sent as `sent` plus `sign` and `sign_type`.
    public static func alipayBody(_ sent: [(String, String)], signedParameters: [(String, String)]? = nil,
                           key: _RSA.Signing.PrivateKey = alipayKey) throws -> [UInt8] {
        let sign = try rsaSign(Array(alipaySignedContent(signedParameters ?? sent).utf8), with: key)
        return formEncode(sent + [("sign", sign), ("sign_type", "RSA2")])
    }

    /// An `alipay.trade.query` answer as Alipay sends it: `{"KEY": RESPONSE, "sign": ...}`, `sign` by `key` over the
    /// exact text of RESPONSE.
    public static func alipayAnswer(_ response: [String: JSONValue], member: String = "alipay_trade_query_response",
                                    key: _RSA.Signing.PrivateKey = alipayKey) throws -> [UInt8] {
        let text = JSONValue.object(response).canonicalJSON
        let sign = try rsaSign(Array(text.utf8), with: key)
        return Array("{\"\(member)\":\(text),\"sign\":\"\(sign)\"}".utf8)
    }

    public static func alipayVerifier() -> AlipayNotificationVerifier {
        AlipayNotificationVerifier(appId: alipayAppId, publicKey: alipayKey.publicKey)
    }

    // MARK: WeChat Pay

    public static let merchantId = "1900000001"
    public static let apiV3KeyText = "0123456789abcdefABCDEF0123456789"
    public static let platformSerial = "5157F09EFDC096DE15EBE81A47057A7232F1B8E1"

    public static func wechatVerifier() -> WeChatPayNotificationVerifier {
        WeChatPayNotificationVerifier(
            merchantId: merchantId, apiV3Key: WeChatPayAPIv3Key(apiV3KeyText)!,
            platformKeys: [platformSerial: wechatPlatformKey.publicKey])
    }

    public static func wechatPaymentResource(mchid: String = merchantId) -> [String: Any] {
        [
            "mchid": mchid, "appid": "wxd678efh567hg6787", "out_trade_no": "order-1",
            "transaction_id": "1217752501201407033233368018", "trade_type": "APP", "trade_state": "SUCCESS",
            "trade_state_desc": "支付成功", "bank_type": "OTHERS", "success_time": "2026-05-01T12:00:04+08:00",
            "payer": ["openid": "oUpF8uMuAJO_M2pxb1Q9zNjWeS6o"],
            "amount": ["total": 1234, "payer_total": 1234, "currency": "CNY", "payer_currency": "CNY"],
        ]
    }

    public static func wechatRefundResource(mchid: String = merchantId) -> [String: Any] {
        [
            "mchid": mchid, "out_trade_no": "order-1", "transaction_id": "1217752501201407033233368018",
            "out_refund_no": "refund-1", "refund_id": "50000000382019052709732678859", "refund_status": "SUCCESS",
            "success_time": "2026-05-02T09:00:00+08:00", "user_received_account": "招商银行信用卡0403",
            "amount": ["total": 1234, "refund": 500, "payer_total": 1234, "payer_refund": 500],
        ]
    }

    /// A notification body whose resource is AES-256-GCM encrypted under `apiV3Key`.
    public static func wechatBody(eventType: String = "TRANSACTION.SUCCESS", resource: [String: Any],
                           apiV3Key: String = apiV3KeyText, tamperCiphertext: Bool = false,
                           id: String = "EV-2018022511223320873") throws -> [UInt8] {
        let nonce = "fdasflkja484"
        let associatedData = "transaction"
        let sealed = try AES.GCM.seal(
            try json(resource), using: SymmetricKey(data: Array(apiV3Key.utf8)),
            nonce: try AES.GCM.Nonce(data: Array(nonce.utf8)), authenticating: Array(associatedData.utf8))
        var combined = [UInt8](sealed.ciphertext) + [UInt8](sealed.tag)
        if tamperCiphertext { combined[0] ^= 0x01 }
        let envelope: [String: Any] = [
            "id": id, "create_time": "2026-05-01T12:00:05+08:00", "resource_type": "encrypt-resource",
            "event_type": eventType, "summary": "支付成功",
            "resource": [
                "original_type": "transaction", "algorithm": "AEAD_AES_256_GCM",
                "ciphertext": Data(combined).base64EncodedString(), "associated_data": associatedData, "nonce": nonce,
            ],
        ]
        return Array(try json(envelope))
    }

    /// Headers signing `body` at `timestamp` with `key`.
    public static func wechatHeaders(body: [UInt8], timestamp: Date = now, serial: String = platformSerial,
                              key: _RSA.Signing.PrivateKey = wechatPlatformKey) throws -> WeChatPayHeaders {
        let seconds = String(Int64(timestamp.timeIntervalSince1970))
        let nonce = "593BEC0C930BF1AFEB40B4A08C8FB242"
        let message = Array("\(seconds)\n\(nonce)\n".utf8) + body + Array("\n".utf8)
        return WeChatPayHeaders(timestamp: seconds, nonce: nonce, signature: try rsaSign(message, with: key), serial: serial)
    }
}
