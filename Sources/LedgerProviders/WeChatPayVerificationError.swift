/// Why a WeChat Pay API v3 notification was refused; each case names one check, for a 4xx answer and a security
/// log line that tells a forgery (signature, tag) from a replay (timestamp) or a misrouted notification (mchid).
public enum WeChatPayVerificationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// `Wechatpay-Serial` names no configured platform key.
    case unknownSerial(String)
    /// `Wechatpay-Signature` is not base64.
    case malformedSignature
    /// `Wechatpay-Timestamp` is not a decimal number of seconds.
    case malformedTimestamp(String)
    /// The signature over `timestamp\nnonce\nbody\n` does not verify with the key the serial names.
    case signatureInvalid
    /// The timestamp is more than the allowed skew away from `now`, before or after (seconds, signed).
    case timestampOutOfWindow(secondsFromNow: Int64)
    /// The body does not decode; `field` names where.
    case malformedBody(field: String)
    /// `resource.algorithm` is not `AEAD_AES_256_GCM`.
    case unsupportedAlgorithm(String)
    /// `resource.ciphertext` is not base64 of at least a 16-byte tag, or `resource.nonce` is not a usable nonce.
    case malformedCiphertext
    /// AES-256-GCM refused the ciphertext: the tag does not hold (tampered, or another APIv3 key).
    case decryptionFailed
    /// `event_type` is neither a `TRANSACTION.*` nor a `REFUND.*` event.
    case unsupportedEventType(String)
    /// The decrypted resource does not decode; `field` names where.
    case malformedResource(field: String)
    /// The resource's `mchid` is not the configured merchant id.
    case merchantIdMismatch(found: String)
    /// `trade_state` / `refund_status` is not one the ledger knows.
    case unknownState(String)
    /// A time field is not RFC 3339.
    case malformedTime(field: String, value: String)
    /// An order query was answered with an error (`code`, `message`), such as SIGN_ERROR for a request WeChat Pay
    /// could not check.
    case queryFailed(status: Int, code: String, message: String)
    /// An order query was answered about another order.
    case orderMismatch(found: String)
    /// An answer came without the `Wechatpay-*` headers that sign it.
    case unsignedAnswer
    /// A refusal (HTTP 4xx) without the `Wechatpay-*` headers: WeChat Pay signs an answer only once it has accepted
    /// our request's signature, so a request it could not check, or one missing a required header, is refused
    /// unsigned. Nothing of it is believed; it is not a forgery either, but a configuration to fix or the provider's
    /// refusal (`code`, `message` as the body says, unchecked).
    case unsignedRefusal(status: Int, code: String, message: String)

    public var description: String {
        switch self {
        case .unknownSerial(let serial): "unknown_serial (\(serial))"
        case .malformedSignature: "malformed_signature"
        case .malformedTimestamp(let text): "malformed_timestamp (\(text))"
        case .signatureInvalid: "signature_invalid"
        case .timestampOutOfWindow(let seconds): "timestamp_out_of_window (\(seconds) s)"
        case .malformedBody(let field): "malformed_body (\(field))"
        case .unsupportedAlgorithm(let algorithm): "unsupported_algorithm (\(algorithm))"
        case .malformedCiphertext: "malformed_ciphertext"
        case .decryptionFailed: "decryption_failed"
        case .unsupportedEventType(let type): "unsupported_event_type (\(type))"
        case .malformedResource(let field): "malformed_resource (\(field))"
        case .merchantIdMismatch(let found): "merchant_id_mismatch (\(found))"
        case .unknownState(let state): "unknown_state (\(state))"
        case .malformedTime(let field, let value): "malformed_time (\(field)=\(value))"
        case .queryFailed(let status, let code, let message): "query_failed (HTTP \(status) \(code): \(message))"
        case .orderMismatch(let found): "order_mismatch (\(found))"
        case .unsignedAnswer: "unsigned_answer"
        case .unsignedRefusal(let status, let code, let message): "unsigned_refusal (HTTP \(status) \(code): \(message))"
        }
    }
}
