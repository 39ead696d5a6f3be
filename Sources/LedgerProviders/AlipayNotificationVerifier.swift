import Crypto
import Foundation
import LedgerCore
import _CryptoExtras

/// Verifies and decodes Alipay's asynchronous notifications (a form-urlencoded POST body), for one app.
///
/// The signed content, per Alipay's documented rule for verifying notifications: every parameter except `sign`
/// and `sign_type`, URL-decoded, parameters with an empty value left out (Alipay's signing rule: empty values
/// take no part in the signature, and its notifications omit them), sorted by key in ascending byte (ASCII)
/// order, each written `key=value` with the raw decoded value, joined with `&`. `sign` is the base64
/// SHA256withRSA (PKCS #1 v1.5, "RSA2") signature of that string's UTF-8 bytes with Alipay's key.
///
/// Checks, in order: the body parses (no duplicate keys); `charset` is UTF-8 (default when absent);
/// `sign` present and base64; `sign_type`, if present, is `RSA2`; the signature holds; `app_id` is the
/// configured one; `seller_id` too when one is configured; then the fields decode (amounts in `trans_currency` when
/// present, else CNY).
public struct AlipayNotificationVerifier: Sendable {
    public let appId: String
    public let publicKey: _RSA.Signing.PublicKey
    /// The merchant's PID (`2088...`); when set, `seller_id` must equal it.
    public let sellerId: String?

    public init(appId: String, publicKey: _RSA.Signing.PublicKey, sellerId: String? = nil) {
        self.appId = appId
        self.publicKey = publicKey
        self.sellerId = sellerId
    }

    public func verify(body: some Collection<UInt8>) throws(AlipayVerificationError) -> AlipayNotification {
        let parameters = try Self.parameters(of: body)
        try checkSignature(parameters)

        let foundAppId = try Self.required("app_id", in: parameters)
        guard foundAppId == appId else { throw .appIdMismatch(found: foundAppId) }
        if let sellerId {
            let found = try Self.required("seller_id", in: parameters)
            guard found == sellerId else { throw .sellerIdMismatch(found: found) }
        }

        let currency = try Self.currency(in: parameters)
        guard let totalAmount = try Self.amount("total_amount", in: parameters, currency: currency) else {
            throw .missingParameter("total_amount")
        }
        let status = try Self.required("trade_status", in: parameters)
        guard let tradeStatus = AlipayTradeStatus(rawValue: status) else { throw .unknownTradeStatus(status) }
        return AlipayNotification(
            orderId: try Self.required("out_trade_no", in: parameters),
            tradeNo: try Self.required("trade_no", in: parameters),
            tradeStatus: tradeStatus,
            totalAmount: totalAmount,
            refundFee: try Self.amount("refund_fee", in: parameters, currency: currency),
            notifyId: try Self.required("notify_id", in: parameters),
            appId: foundAppId,
            paymentTime: try Self.beijingTime("gmt_payment", in: parameters),
            refundTime: try Self.beijingTime("gmt_refund", in: parameters),
            parameters: parameters, rawBody: Array(body))
    }

    /// `sign` (RSA2) over the signed content, with Alipay's key: the check that proves Alipay sent these parameters,
    /// and the only one a stored notification is put to again (`verifyStoredNotification`).
    func checkSignature(_ parameters: [String: String]) throws(AlipayVerificationError) {
        guard let sign = parameters["sign"], !sign.isEmpty else { throw .missingSignature }
        if let signType = parameters["sign_type"], signType != "RSA2" { throw .unsupportedSignType(signType) }
        guard let signature = Base64Decoding.standard(sign) else { throw .malformedSignature }
        let content = Self.signedContent(parameters)
        guard publicKey.isValidSignature(
            _RSA.Signing.RSASignature(rawRepresentation: signature), for: SHA256.hash(data: Array(content.utf8)),
            padding: .insecurePKCS1v1_5)
        else { throw .signatureInvalid }
    }

    /// The string Alipay signed (see the type's documentation).
    static func signedContent(_ parameters: [String: String]) -> String {
        parameters
            .filter { $0.key != "sign" && $0.key != "sign_type" && !$0.value.isEmpty }
            .sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
            .map { "\($0.key)=\($0.value)" }
            .joined(separator: "&")
    }

    /// Parses the body and decodes its keys and values in its `charset`.
    static func parameters(of body: some Collection<UInt8>) throws(AlipayVerificationError) -> [String: String] {
        let form: FormURLEncoded
        do { form = try FormURLEncoded(body) } catch {
            switch error {
            case .duplicateKey(let key): throw .duplicateParameter(String(decoding: key, as: UTF8.self))
            case .pairWithoutEquals, .malformedPercentEscape: throw .malformedBody
            }
        }
        // Before any key or value is compared or hashed as a String (`StreamSafeText`).
        guard form.pairs.allSatisfy({ StreamSafeText.isStreamSafe(utf8: $0.key) && StreamSafeText.isStreamSafe(utf8: $0.value) })
        else { throw .invalidCharacterEncoding }
        if let charset = form.pairs.first(where: { $0.key == Array("charset".utf8) })?.value {
            let name = String(decoding: charset, as: UTF8.self)
            guard ["utf-8", "utf8"].contains(name.lowercased()) else { throw .unsupportedCharset(name) }
        }
        var parameters: [String: String] = [:]
        for (key, value) in form.pairs {
            guard let key = String(validating: key, as: UTF8.self), let value = String(validating: value, as: UTF8.self)
            else { throw .invalidCharacterEncoding }
            parameters[key] = value
        }
        return parameters
    }

    static func required(_ key: String, in parameters: [String: String]) throws(AlipayVerificationError) -> String {
        guard let value = parameters[key], !value.isEmpty else { throw .missingParameter(key) }
        return value
    }

    /// The currency of the trade's amounts: `trans_currency` when Alipay sends it (a cross-border trade, priced in
    /// that currency: its `total_amount` is in it, not in yuan), else CNY. Three upper-case letters (ISO 4217), its
    /// decimals by `CurrencyExponent`; the ledger then compares the amount, currency included, with the order's.
    static func currency(in parameters: [String: String]) throws(AlipayVerificationError) -> String {
        guard let text = parameters["trans_currency"], !text.isEmpty else { return "CNY" }
        guard text.utf8.count == 3, text.utf8.allSatisfy({ (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }) else {
            throw .malformedCurrency(field: "trans_currency", value: text)
        }
        return text
    }

    /// The amount `key` in minor units of `currency` (`DecimalAmount`).
    static func amount(_ key: String, in parameters: [String: String], currency: String) throws(AlipayVerificationError) -> Money? {
        guard let text = parameters[key], !text.isEmpty else { return nil }
        guard let minorUnits = DecimalAmount.minorUnits(text, currency: currency) else {
            throw .malformedAmount(field: key, value: text)
        }
        return Money(value: minorUnits, currency: currency)
    }

    /// `yyyy-MM-dd HH:mm:ss` in Beijing time (UTC+8, no daylight saving).
    static func beijingTime(_ key: String, in parameters: [String: String]) throws(AlipayVerificationError) -> Date? {
        guard let text = parameters[key], !text.isEmpty else { return nil }
        let bytes = Array(text.utf8)
        guard bytes.count == 19, bytes[10] == UInt8(ascii: " "),
              let date = RFC3339.parse(String(decoding: bytes[0..<10], as: UTF8.self) + "T"
                  + String(decoding: bytes[11...], as: UTF8.self) + "+08:00")
        else { throw .malformedTime(field: key, value: text) }
        return date
    }
}
