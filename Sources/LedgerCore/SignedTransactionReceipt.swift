import Crypto
import Foundation

/// `receipt.received` carrying a StoreKit 2 signed transaction (`data.signedTransaction`, a JWS): what the ledger
/// records once the signature has been checked (the check itself is the providers' module's, done by the caller), so
/// no caller has to be trusted to say "verified".
///
/// - Verified: the receipt keeps the JWS verbatim, with `transactionId` and `originalTransactionId` from what Apple
///   signed, followed by the ledger's own `receipt.verified` built from the signed transaction, so the order rules
///   (product, environment, transaction, account) judge what Apple signed.
/// - Not verified: the receipt keeps the JWS's SHA-256 only (never the forged bytes), against the `transactionId` the
///   caller gave, followed by `verification.failed` (`signature_invalid`, not retryable, the failed check as message).
/// The follow-up event's id is derived from the receipt's, so a retry of the request is an idempotent replay.
public enum SignedTransactionReceipt {
    /// The follow-up of the receipt event `receiptId`.
    public static func followUpId(of receiptId: UUID) -> UUID {
        NameBasedUUID.version5(namespace: followUpNamespace, name: receiptId.uuidString)
    }

    static let followUpNamespace = UUID(uuid: (
        0x91, 0x2d, 0x4c, 0x7e, 0x05, 0xb3, 0x4a, 0x8f, 0xa1, 0x6c, 0x3e, 0x70, 0x2f, 0xd9, 0x18, 0x64))

    /// The receipt's data and its follow-up when Apple's signature holds: `verification` is what Apple signed.
    public static func verified(
        _ receipt: [String: JSONValue], transactionId: String, originalTransactionId: String, verification: ReceiptVerified
    ) -> (receipt: [String: JSONValue], followUp: OrderEvent) {
        var receipt = receipt
        receipt["transactionId"] = .string(transactionId)
        receipt["originalTransactionId"] = .string(originalTransactionId)
        return (receipt, .receiptVerified(verification))
    }

    /// The receipt's data and its follow-up when the signed transaction `jws` does not verify, for `reason`.
    public static func refused(_ receipt: [String: JSONValue], jws: String, reason: String) -> (receipt: [String: JSONValue], followUp: OrderEvent) {
        var receipt = receipt
        receipt["signedTransaction"] = nil
        receipt["receiptSha256"] = .string(SHA256.hash(data: Data(jws.utf8)).map { String(format: "%02x", $0) }.joined())
        return (receipt, .verificationFailed(VerificationFailed(
            code: "signature_invalid", retryable: false, message: "signed transaction refused: \(reason)")))
    }
}
