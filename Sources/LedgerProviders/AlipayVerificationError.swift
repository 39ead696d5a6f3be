/// Why an Alipay asynchronous notification was refused; each case names one check, for a 4xx answer and a
/// security log line that tells a forgery (signature) from a misrouted or malformed notification.
public enum AlipayVerificationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A non-empty segment without `=`, or a `%` not followed by two hex digits.
    case malformedBody
    /// A parameter occurs twice: which value was signed would be ambiguous.
    case duplicateParameter(String)
    /// `charset` names an encoding other than UTF-8 (the only one the ledger asks Alipay for).
    case unsupportedCharset(String)
    /// A key or value is not valid text in the notification's charset.
    case invalidCharacterEncoding
    /// No `sign` parameter.
    case missingSignature
    /// `sign_type` is present and not `RSA2`.
    case unsupportedSignType(String)
    /// `sign` is not base64.
    case malformedSignature
    /// `sign` does not verify (SHA256withRSA) with the configured Alipay public key.
    case signatureInvalid
    /// A required parameter is absent or empty.
    case missingParameter(String)
    /// `app_id` is not the configured one.
    case appIdMismatch(found: String)
    /// `seller_id` is not the configured one.
    case sellerIdMismatch(found: String)
    /// A trade query was answered with an error other than "no such trade" (`code`, `sub_code`, `sub_msg`).
    case queryFailed(code: String, subCode: String, message: String)
    /// A refusal (`code` other than 10000) without `sign`: Alipay signs an `error_response` only sometimes (not
    /// when it could not check our request's signature or app id). Nothing of it is believed; it is not a forgery
    /// either, but a configuration to fix or the provider's refusal (its words, unchecked).
    case unsignedRefusal(code: String, subCode: String, message: String)
    /// A trade query was answered about another order.
    case orderMismatch(found: String)
    /// `trade_status` is not one of TRADE_SUCCESS, TRADE_FINISHED, TRADE_CLOSED, WAIT_BUYER_PAY.
    case unknownTradeStatus(String)
    /// An amount parameter is not a plain decimal of its currency (at most two decimals; none past its exponent but zeros).
    case malformedAmount(field: String, value: String)
    /// `trans_currency` is not three upper-case letters (an ISO 4217 code).
    case malformedCurrency(field: String, value: String)
    /// A time parameter is not `yyyy-MM-dd HH:mm:ss`.
    case malformedTime(field: String, value: String)

    public var description: String {
        switch self {
        case .malformedBody: "malformed_body"
        case .duplicateParameter(let key): "duplicate_parameter (\(key))"
        case .unsupportedCharset(let charset): "unsupported_charset (\(charset))"
        case .invalidCharacterEncoding: "invalid_character_encoding"
        case .missingSignature: "missing_signature"
        case .unsupportedSignType(let type): "unsupported_sign_type (\(type))"
        case .malformedSignature: "malformed_signature"
        case .signatureInvalid: "signature_invalid"
        case .missingParameter(let key): "missing_parameter (\(key))"
        case .appIdMismatch(let found): "app_id_mismatch (\(found))"
        case .sellerIdMismatch(let found): "seller_id_mismatch (\(found))"
        case .queryFailed(let code, let subCode, let message): "query_failed (\(code) \(subCode): \(message))"
        case .unsignedRefusal(let code, let subCode, let message): "unsigned_refusal (\(code) \(subCode): \(message))"
        case .orderMismatch(let found): "order_mismatch (\(found))"
        case .unknownTradeStatus(let status): "unknown_trade_status (\(status))"
        case .malformedAmount(let field, let value): "malformed_amount (\(field)=\(value))"
        case .malformedCurrency(let field, let value): "malformed_currency (\(field)=\(value))"
        case .malformedTime(let field, let value): "malformed_time (\(field)=\(value))"
        }
    }
}
