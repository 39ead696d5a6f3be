import LedgerCore
import LedgerProviders

/// A provider's answer to a recovery question, as it came, for the attempt to keep (`recovery_attempts.answer`):
/// the body verbatim and the headers that sign it, in the shape a `provider.notified` event's `evidence` has, so
/// that `ledger verify --signatures` checks a kept answer with the same code (`verifyStoredSignature(evidence:)`).
/// `verified` says whether its signature was checked on arrival: a "not yet" or a signed refusal was; an unsigned
/// refusal or an answer that failed verification was not, and is kept so that an auditor sees what was refused.
enum KeptAnswer {
    static func alipay(_ body: [UInt8], verified: Bool) -> JSONValue {
        ["source": "query", "verified": .bool(verified), "body": .string(String(decoding: body, as: UTF8.self))]
    }

    static func wechatPay(_ answer: (status: Int, headers: WeChatPayHeaders?, body: [UInt8]), verified: Bool) -> JSONValue {
        var kept: [String: JSONValue] = [
            "source": "query", "verified": .bool(verified), "status": .int(Int64(answer.status)),
            "body": .string(String(decoding: answer.body, as: UTF8.self)),
        ]
        if let headers = answer.headers {
            kept["timestamp"] = .string(headers.timestamp)
            kept["nonce"] = .string(headers.nonce)
            kept["serial"] = .string(headers.serial)
            kept["signature"] = .string(headers.signature)
        }
        return .object(kept)
    }

    /// Apple signs its answer inside the body (a JWS); its errors are not signed and are said in words instead.
    static func appStore(signedTransactionInfo: String, environment: AppStoreServerEnvironment) -> JSONValue {
        ["source": "query", "verified": false, "environment": .string(environment.rawValue),
         "signedTransactionInfo": .string(signedTransactionInfo)]
    }
}
