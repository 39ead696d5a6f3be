import LedgerCore

// Checking again, for an audit (`ledger verify --signatures`), the signature of an Alipay or WeChat Pay message the
// ledger keeps: the `evidence` of `provider.notified` (or of a message kept unmatched), written by `message(…)` in
// ProviderFacts.swift, AlipayTradeQueryAnswer.swift and WeChatPayQueryAnswer.swift. Only the signature is judged,
// with the verifiers' own code: it alone proves the provider sent these exact bytes. What else was checked on arrival
// (the app id or merchant, the timestamp's freshness, the encrypted resource, the fields) described the message then;
// an audit runs long after, so a WeChat Pay timestamp hours old is expected, not a failure.

/// What a stored message was: one the provider sent on its own (a notification), or its answer when the ledger asked
/// (evidence `"source": "query"`, from `ledger recover`).
public enum StoredMessageKind: String, Sendable, Hashable {
    case notification, query

    public init(evidence: JSONValue) {
        self = evidence["source"] == "query" ? .query : .notification
    }
}

/// Why a stored message's signature does not hold again: the evidence lacks what was signed, or the provider's
/// check failed (its `description`, the stable name the security log uses).
public enum StoredSignatureError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The evidence holds no string `field`, which the signature covers.
    case evidenceIncomplete(field: String)
    case alipay(AlipayVerificationError)
    case wechatPay(WeChatPayVerificationError)

    public var description: String {
        switch self {
        case .evidenceIncomplete(let field): "evidence_incomplete (evidence.\(field))"
        case .alipay(let error): error.description
        case .wechatPay(let error): error.description
        }
    }

    /// The string member `field` of `evidence`.
    static func field(_ field: String, of evidence: JSONValue) throws(StoredSignatureError) -> String {
        guard case .string(let text)? = evidence[field] else { throw .evidenceIncomplete(field: field) }
        return text
    }
}

extension AlipayNotificationVerifier {
    /// Checks again the signature of an Alipay message kept as `evidence`: its `body` is the notification's form body
    /// or the query's answer, verbatim.
    public func verifyStoredSignature(evidence: JSONValue) throws(StoredSignatureError) {
        let body = Array(try StoredSignatureError.field("body", of: evidence).utf8)
        do throws(AlipayVerificationError) {
            switch StoredMessageKind(evidence: evidence) {
            case .notification: try verifyStoredNotification(body: body)
            case .query: try verifyStoredQueryAnswer(body: body)
            }
        } catch {
            throw .alipay(error)
        }
    }

    /// A notification's `sign` (RSA2 over its sorted, non-empty parameters), as `verify(body:)` checks it first.
    public func verifyStoredNotification(body: some Collection<UInt8>) throws(AlipayVerificationError) {
        try checkSignature(Self.parameters(of: body))
    }

    /// A query answer's `sign` over the exact text of `alipay_trade_query_response` (or `error_response`), as
    /// `verifyQueryAnswer` checks it first.
    public func verifyStoredQueryAnswer(body: [UInt8]) throws(AlipayVerificationError) {
        _ = try checkQueryAnswerSignature(body)
    }
}

extension WeChatPayNotificationVerifier {
    /// Checks again the signature of a WeChat Pay message kept as `evidence`: a notification or a query's answer
    /// alike, its `body` verbatim with the `Wechatpay-*` headers that signed it (`timestamp`, `nonce`, `serial`,
    /// `signature`).
    public func verifyStoredSignature(evidence: JSONValue) throws(StoredSignatureError) {
        let headers = WeChatPayHeaders(
            timestamp: try StoredSignatureError.field("timestamp", of: evidence),
            nonce: try StoredSignatureError.field("nonce", of: evidence),
            signature: try StoredSignatureError.field("signature", of: evidence),
            serial: try StoredSignatureError.field("serial", of: evidence))
        let body = Array(try StoredSignatureError.field("body", of: evidence).utf8)
        do throws(WeChatPayVerificationError) {
            try verifyStoredSignature(headers: headers, body: body)
        } catch {
            throw .wechatPay(error)
        }
    }

    /// SHA256withRSA over `timestamp\nnonce\nbody\n` by the platform key the serial names, however old the timestamp:
    /// a retired platform key must stay in `platformKeys` for the messages it signed to be checked again.
    public func verifyStoredSignature(headers: WeChatPayHeaders, body: [UInt8]) throws(WeChatPayVerificationError) {
        _ = try checkSignature(headers: headers, body: body)
    }
}
