import Crypto
import Foundation
import LedgerCore
import LedgerPostgres
import LedgerProviders

/// `receipt.received` carrying a StoreKit 2 signed transaction (`data.signedTransaction`, a JWS): the ledger
/// verifies it as it verifies Apple's notifications and itself records what follows, so no caller has to be trusted
/// to say "verified".
///
/// - Verified: the receipt is recorded with the JWS kept verbatim (`transactionId` and `originalTransactionId`
///   from what Apple signed; a `transactionId` the caller gave must agree), followed by the ledger's own
///   `receipt.verified` built from the signed transaction, so the order rules (product, environment, transaction,
///   account) judge what Apple signed.
/// - Not verified: the receipt is recorded with the JWS's SHA-256 only (never the forged bytes), against the
///   `transactionId` the caller gave, followed by `verification.failed` (`signature_invalid`, not retryable, the
///   failed check as message).
/// The follow-up event's id is derived from the receipt's, so a retry of the request is an idempotent replay.
enum SignedTransactionReceipts {
    static let followUpNamespace = UUID(uuid: (
        0x91, 0x2d, 0x4c, 0x7e, 0x05, 0xb3, 0x4a, 0x8f, 0xa1, 0x6c, 0x3e, 0x70, 0x2f, 0xd9, 0x18, 0x64))

    static func resolve(_ submissions: [Submission], verifier: AppStoreJWSVerifier?) async throws -> [Submission] {
        var resolved: [Submission] = []
        for (index, submission) in submissions.enumerated() {
            let prefix = submissions.count == 1 ? "data" : "events[\(index)].data"
            guard submission.type == EventType.receiptReceived.rawValue, case .object(var data) = submission.data,
                  let signed = data["signedTransaction"], signed != .null
            else {
                resolved.append(submission)
                continue
            }
            guard case .string(let jws) = signed else {
                throw APIError.invalidRequest(field: "\(prefix).signedTransaction", "\(prefix).signedTransaction must be a string (a JWS)")
            }
            guard let verifier else { throw ProviderRoutes.notConfigured(.appStore) }
            let claimed: String?
            if case .string(let text)? = data["transactionId"] { claimed = text } else { claimed = nil }
            let followUpId = NameBasedUUID.version5(namespace: followUpNamespace, name: submission.eventId.uuidString)
            let followUp: OrderEvent
            do {
                let transaction = try await verifier.verifyTransaction(jws, now: Date())
                if let claimed, claimed != transaction.transactionId {
                    throw APIError.invalidRequest(
                        field: "\(prefix).transactionId",
                        "\(prefix).transactionId is \(claimed), but the signed transaction is \(transaction.transactionId)")
                }
                data["transactionId"] = .string(transaction.transactionId)
                data["originalTransactionId"] = .string(transaction.originalTransactionId)
                followUp = .receiptVerified(transaction.verification)
            } catch let error as AppStoreVerificationError {
                guard claimed != nil else {
                    throw APIError.invalidRequest(
                        field: "\(prefix).transactionId",
                        "\(prefix).signedTransaction does not verify (\(error)) and no \(prefix).transactionId was given to record the failure against")
                }
                data["signedTransaction"] = nil
                data["receiptSha256"] = .string(SHA256.hash(data: Data(jws.utf8)).map { String(format: "%02x", $0) }.joined())
                followUp = .verificationFailed(VerificationFailed(
                    code: "signature_invalid", retryable: false, message: "signed transaction refused: \(error)"))
            }
            resolved.append(Submission(eventId: submission.eventId, type: submission.type, data: .object(data), occurredAt: submission.occurredAt))
            resolved.append(Submission(eventId: followUpId, type: followUp.type.rawValue, data: followUp.data, occurredAt: nil))
        }
        return resolved
    }
}
