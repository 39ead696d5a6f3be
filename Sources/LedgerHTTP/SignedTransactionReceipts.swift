import Foundation
import LedgerCore
import LedgerPostgres
import LedgerProviders

/// `receipt.received` carrying a StoreKit 2 signed transaction (`data.signedTransaction`): the signature is checked
/// here, with the App Store verifier `serve` was configured with; what is then recorded, and what follows the receipt,
/// are the ledger's rules (`SignedTransactionReceipt`, LedgerCore).
enum SignedTransactionReceipts {
    static func resolve(_ submissions: [Submission], verifier: AppStoreJWSVerifier?) async throws -> [Submission] {
        var resolved: [Submission] = []
        for (index, submission) in submissions.enumerated() {
            let prefix = submissions.count == 1 ? "data" : "events[\(index)].data"
            guard submission.type == EventType.receiptReceived.rawValue, case .object(let data) = submission.data,
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
            let recorded: (receipt: [String: JSONValue], followUp: OrderEvent)
            do {
                let transaction = try await verifier.verifyTransaction(jws, now: Date())
                if let claimed, claimed != transaction.transactionId {
                    throw APIError.invalidRequest(
                        field: "\(prefix).transactionId",
                        "\(prefix).transactionId is \(claimed), but the signed transaction is \(transaction.transactionId)")
                }
                recorded = SignedTransactionReceipt.verified(
                    data, transactionId: transaction.transactionId, originalTransactionId: transaction.originalTransactionId,
                    verification: transaction.verification)
            } catch let error as AppStoreVerificationError {
                guard claimed != nil else {
                    throw APIError.invalidRequest(
                        field: "\(prefix).transactionId",
                        "\(prefix).signedTransaction does not verify (\(error)) and no \(prefix).transactionId was given to record the failure against")
                }
                recorded = SignedTransactionReceipt.refused(data, jws: jws, reason: "\(error)")
            }
            resolved.append(Submission(
                eventId: submission.eventId, type: submission.type, data: .object(recorded.receipt), occurredAt: submission.occurredAt))
            resolved.append(Submission(
                eventId: SignedTransactionReceipt.followUpId(of: submission.eventId), type: recorded.followUp.type.rawValue,
                data: recorded.followUp.data, occurredAt: nil))
        }
        return resolved
    }
}
