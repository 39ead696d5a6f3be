import Foundation
import LedgerCore
import LedgerPostgres
import LedgerProviders

/// `receipt.received` from an older app: the base64 App Store receipt (`data.receipt`) and no `transactionId`. The
/// transaction id is read from the receipt (`AppReceipt`: attribute 17, then 1703 and 1705), so the receipt is
/// recorded against the transaction it names and the recovery schedule asks Apple about that transaction (Get
/// Transaction Info) once it stays unverified. Nothing read from the receipt is believed: only Apple's signed answer
/// verifies the order.
///
/// A receipt that lists several purchases cannot say which is this order's: refused, naming them, so the app gives
/// `transactionId`. A receipt that lists none (a receipt refreshed with `SKReceiptRefreshRequest`, or read before the
/// purchase finished) is refused saying so: it proves nothing either way, least of all "not paid".
enum LegacyReceipts {
    static func resolve(_ submissions: [Submission]) throws -> [Submission] {
        try submissions.enumerated().map { index, submission in
            guard submission.type == EventType.receiptReceived.rawValue, case .object(var data) = submission.data,
                  data["transactionId"] ?? .null == .null, data["signedTransaction"] ?? .null == .null,
                  case .string(let receipt)? = data["receipt"]
            else { return submission }
            let field = (submissions.count == 1 ? "data" : "events[\(index)].data") + ".receipt"
            let purchase = try Self.purchase(in: receipt, field: field)
            data["transactionId"] = .string(purchase.transactionId)
            if purchase.originalTransactionId != purchase.transactionId {
                data["originalTransactionId"] = .string(purchase.originalTransactionId)
            }
            return Submission(eventId: submission.eventId, type: submission.type, data: .object(data), occurredAt: submission.occurredAt)
        }
    }

    static func purchase(in receipt: String, field: String) throws -> AppReceipt.InAppPurchase {
        let parsed: AppReceipt
        do throws(AppReceiptError) {
            parsed = try AppReceipt.parse(base64: receipt)
        } catch .noInAppPurchases {
            throw APIError.invalidRequest(field: field, "\(field): \(AppReceiptError.noInAppPurchases); give the transactionId the app's purchase returned")
        } catch {
            throw APIError.invalidRequest(field: field, "\(field) is not an App Store receipt the ledger can read (\(error)); give transactionId")
        }
        let ids = parsed.transactionIds
        guard ids.count == 1, let only = parsed.inAppPurchases.first(where: { $0.transactionId == ids[0] }) else {
            throw APIError.invalidRequest(
                field: field, "\(field) lists \(ids.count) purchases (\(ids.prefix(10).joined(separator: ", "))): give transactionId to say which is this order's")
        }
        return only
    }
}
