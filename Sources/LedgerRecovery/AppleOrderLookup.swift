import Foundation
import LedgerCore
import LedgerPostgres
import LedgerProviderClients
import LedgerProviders

/// Support's question when all a customer has is Apple's emailed receipt: "order MK5TTTR3KP". Apple's Look Up Order
/// ID gives the transactions of that order; each is verified (`AppStoreJWSVerifier`) and recorded as Apple's answer
/// about it, exactly as asking about one order records it (`queriedMessage` → `Ledger.recordProviderMessage`):
/// matched to the ledger's order by transaction id, then `appAccountToken`, or kept for finance when none matches.
/// Idempotent: looking the same order up again records nothing new.
public enum AppleOrderLookup: Sendable, Hashable {
    /// Apple's transactions for the order id, each with what became of it.
    case found([Transaction])
    /// Apple knows no such order id for this app (status 1).
    case invalid
    /// Apple could not be asked: the reason, and whether it is the configuration (else: ask again later).
    case notAsked(String, configuration: Bool)
    /// Not asked: this node already sent Apple `RecoveryPlan.personAsksPerSecond` people's questions in the last
    /// second (100 look-ups at once had made 100 requests in a second); ask again after `wait`.
    case tooSoon(wait: Duration)

    public struct Transaction: Sendable, Hashable {
        public var transactionId: String?
        public var productId: String?
        /// The ledger's order it was recorded on (nil: none matched, or it did not verify).
        public var orderId: String?
        public var outcome: RecoveryOutcome
        public var said: String
    }
}

extension Recoverer {
    /// Looks up Apple's order id (the one on the customer's receipt) and records what Apple signs about it.
    public func lookUpAppleOrder(_ appleOrderId: String) async throws -> AppleOrderLookup {
        guard let appStore = questions.appStore else {
            return .notAsked("the App Store is not configured for asking: --providers-config needs appStore.trustedRoots and appStore.serverAPI", configuration: true)
        }
        let now = clock()
        if let retryAt = personAsks.take(.appStore, now: now) { return .tooSoon(wait: .until(retryAt, from: now)) }
        let answer: AppStoreOrderLookup
        do throws(AppStoreServerAPIError) {
            answer = try await appStore.api.lookUpOrder(appleOrderId)
        } catch {
            if case .configuration = error { return .notAsked(error.description, configuration: true) }
            if case .invalidOrderId = error { return .invalid }
            return .notAsked(error.description, configuration: false)
        }
        guard case .found(let signedTransactions) = answer else { return .invalid }
        var transactions: [AppleOrderLookup.Transaction] = []
        for signed in signedTransactions {
            let transaction: AppStoreTransaction
            do {
                transaction = try await appStore.verifier.verifyTransaction(signed, now: Date())
            } catch {
                logger.warning("security: a transaction Apple's order lookup returned did not verify; nothing recorded", metadata: [
                    "appleOrderId": "\(appleOrderId)", "reason": "\(error)",
                ])
                transactions.append(.init(transactionId: nil, productId: nil, orderId: nil, outcome: .unverified,
                                          said: "a transaction that did not verify: \(error); nothing recorded"))
                continue
            }
            let message = transaction.queriedMessage
            let (outcome, said, _) = try await record(message, said: "Apple signed transaction \(transaction.transactionId) (\(message.fact.effect.rawValue), \(transaction.productId))")
            let orderId: String? = switch try await database.ledger.transaction(transaction.transactionId) {
            case let status?: status.orderId
            case nil: nil
            }
            transactions.append(.init(transactionId: transaction.transactionId, productId: transaction.productId, orderId: orderId,
                                      outcome: outcome, said: said))
        }
        return .found(transactions)
    }
}
