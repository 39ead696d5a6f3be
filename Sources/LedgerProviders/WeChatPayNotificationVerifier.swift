import Crypto
import Foundation
import LedgerCore
import _CryptoExtras

/// The 32-byte APIv3 key WeChat Pay encrypts notification resources with. A secret: it never appears in
/// `description`, `debugDescription` or a reflection (`dump`), so a log line or crash report cannot leak it.
public struct WeChatPayAPIv3Key: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    let key: SymmetricKey

    /// `text` is the key as set in the merchant platform: 32 ASCII characters, used as its UTF-8 bytes.
    public init?(_ text: String) {
        let bytes = Array(text.utf8)
        guard bytes.count == 32 else { return nil }
        key = SymmetricKey(data: bytes)
    }

    public var description: String { "<redacted>" }
    public var debugDescription: String { "<redacted>" }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}

/// Verifies, decrypts and decodes WeChat Pay API v3 notifications for one merchant.
///
/// Checks, in order: `Wechatpay-Serial` names a configured platform key (certificate or "WeChat Pay public
/// key"); the signature is base64; the timestamp is decimal seconds; SHA256withRSA (PKCS #1 v1.5) verifies over
/// `timestamp\nnonce\nbody\n` (body as raw bytes); the timestamp is within `maximumClockSkew` of `now` either way
/// (checked after the signature, so a replay is told from a forgery); `resource.algorithm` is
/// `AEAD_AES_256_GCM`; AES-256-GCM with the APIv3 key opens `ciphertext` (= ciphertext ‖ 16-byte tag) with
/// `nonce` and `associated_data`; the resource decodes by `event_type` (TRANSACTION.* payment, REFUND.* refund);
/// its `mchid` is the configured merchant id.
public struct WeChatPayNotificationVerifier: Sendable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    public let merchantId: String
    let apiV3Key: WeChatPayAPIv3Key
    /// Platform keys by serial (`Wechatpay-Serial`).
    public let platformKeys: [String: _RSA.Signing.PublicKey]
    public let maximumClockSkew: TimeInterval

    public init(merchantId: String, apiV3Key: WeChatPayAPIv3Key, platformKeys: [String: _RSA.Signing.PublicKey],
                maximumClockSkew: TimeInterval = 300) {
        self.merchantId = merchantId
        self.apiV3Key = apiV3Key
        self.platformKeys = platformKeys
        self.maximumClockSkew = maximumClockSkew
    }

    public var description: String {
        "WeChatPayNotificationVerifier(merchantId: \(merchantId), apiV3Key: <redacted>, serials: \(platformKeys.keys.sorted()))"
    }
    public var debugDescription: String { description }
    public var customMirror: Mirror {
        Mirror(self, children: ["merchantId": merchantId, "serials": platformKeys.keys.sorted()], displayStyle: .struct)
    }

    public func verify(headers: WeChatPayHeaders, body: some Collection<UInt8>, now: Date)
        throws(WeChatPayVerificationError) -> WeChatPayNotification
    {
        let body = Array(body)
        try checkSignature(headers: headers, body: body, now: now)

        let envelope: WeChatPayWire.Envelope
        do { envelope = try JSONDecoder().decode(WeChatPayWire.Envelope.self, from: Data(body)) } catch {
            throw .malformedBody(field: DecodingErrorField.path(of: error))
        }
        let plaintext = try decrypt(envelope.resource)
        let resource: WeChatPayNotification.Resource
        if envelope.event_type.hasPrefix("TRANSACTION.") {
            resource = .payment(try payment(from: plaintext))
        } else if envelope.event_type.hasPrefix("REFUND.") {
            resource = .refund(try refund(from: plaintext))
        } else {
            throw .unsupportedEventType(envelope.event_type)
        }
        return WeChatPayNotification(
            id: envelope.id, eventType: envelope.event_type,
            createTime: try Self.time(envelope.create_time, field: "create_time"), summary: envelope.summary,
            resource: resource, rawBody: body)
    }

    /// What WeChat Pay signs, on a notification as on an API answer: `Wechatpay-Signature` by the platform key
    /// `Wechatpay-Serial` names, over `timestamp\nnonce\nbody\n`, with the timestamp within the allowed skew.
    func checkSignature(headers: WeChatPayHeaders, body: [UInt8], now: Date) throws(WeChatPayVerificationError) {
        let timestamp = try checkSignature(headers: headers, body: body)
        let skew = Double(timestamp) - now.timeIntervalSince1970
        guard abs(skew) <= maximumClockSkew else {
            throw .timestampOutOfWindow(secondsFromNow: Int64(exactly: skew.rounded()) ?? (skew < 0 ? .min : .max))
        }
    }

    /// The signature alone, whenever it was made: what a stored message is put to again (`verifyStoredSignature`),
    /// since an audit runs long after the timestamp was fresh. Returns the timestamp it covers (seconds).
    func checkSignature(headers: WeChatPayHeaders, body: [UInt8]) throws(WeChatPayVerificationError) -> Int64 {
        guard let key = platformKeys[headers.serial] else { throw .unknownSerial(headers.serial) }
        guard let signature = Base64Decoding.standard(headers.signature) else { throw .malformedSignature }
        let timestampBytes = Array(headers.timestamp.utf8)
        guard (1...12).contains(timestampBytes.count), timestampBytes.allSatisfy(DecimalAmount.isDigit),
              let timestamp = Int64(headers.timestamp)
        else { throw .malformedTimestamp(headers.timestamp) }
        let message = Array("\(headers.timestamp)\n\(headers.nonce)\n".utf8) + body + [UInt8(ascii: "\n")]
        guard key.isValidSignature(
            _RSA.Signing.RSASignature(rawRepresentation: signature), for: SHA256.hash(data: message),
            padding: .insecurePKCS1v1_5)
        else { throw .signatureInvalid }
        return timestamp
    }

    /// AEAD_AES_256_GCM: `ciphertext` is base64 of ciphertext ‖ tag; `nonce` and `associated_data` are UTF-8 text.
    func decrypt(_ resource: WeChatPayWire.EncryptedResource) throws(WeChatPayVerificationError) -> [UInt8] {
        guard resource.algorithm == "AEAD_AES_256_GCM" else { throw .unsupportedAlgorithm(resource.algorithm) }
        guard let combined = Base64Decoding.standard(resource.ciphertext), combined.count >= 16,
              let nonce = try? AES.GCM.Nonce(data: Array(resource.nonce.utf8))
        else { throw .malformedCiphertext }
        do {
            let box = try AES.GCM.SealedBox(
                nonce: nonce, ciphertext: combined.dropLast(16), tag: combined.suffix(16))
            let plaintext = try AES.GCM.open(
                box, using: apiV3Key.key, authenticating: Array((resource.associated_data ?? "").utf8))
            return Array(plaintext)
        } catch {
            throw .decryptionFailed
        }
    }

    func payment(from plaintext: [UInt8]) throws(WeChatPayVerificationError) -> WeChatPayPayment {
        let wire = try Self.decode(WeChatPayWire.Payment.self, from: plaintext)
        guard wire.mchid == merchantId else { throw .merchantIdMismatch(found: wire.mchid) }
        guard let state = WeChatPayTradeState(rawValue: wire.trade_state) else { throw .unknownState(wire.trade_state) }
        return WeChatPayPayment(
            mchid: wire.mchid, appid: wire.appid, orderId: wire.out_trade_no, transactionId: wire.transaction_id,
            tradeState: state, amount: Money(value: wire.amount.total, currency: wire.amount.currency),
            successTime: try Self.time(wire.success_time, field: "success_time"))
    }

    func refund(from plaintext: [UInt8]) throws(WeChatPayVerificationError) -> WeChatPayRefund {
        let wire = try Self.decode(WeChatPayWire.Refund.self, from: plaintext)
        guard wire.mchid == merchantId else { throw .merchantIdMismatch(found: wire.mchid) }
        guard let status = WeChatPayRefundStatus(rawValue: wire.refund_status) else {
            throw .unknownState(wire.refund_status)
        }
        return WeChatPayRefund(
            mchid: wire.mchid, orderId: wire.out_trade_no, transactionId: wire.transaction_id,
            outRefundNo: wire.out_refund_no, refundId: wire.refund_id, refundStatus: status,
            refund: Money(value: wire.amount.refund, currency: "CNY"),
            total: Money(value: wire.amount.total, currency: "CNY"),
            successTime: try Self.time(wire.success_time, field: "success_time"))
    }

    static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws(WeChatPayVerificationError) -> T {
        do { return try JSONDecoder().decode(type, from: Data(bytes)) } catch {
            throw .malformedResource(field: DecodingErrorField.path(of: error))
        }
    }

    static func time(_ text: String?, field: String) throws(WeChatPayVerificationError) -> Date? {
        guard let text else { return nil }
        guard let date = RFC3339.parse(text) else { throw .malformedTime(field: field, value: text) }
        return date
    }
}
