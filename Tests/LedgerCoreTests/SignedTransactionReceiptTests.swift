import Foundation
import LedgerCore
import Testing

/// What a receipt carrying a StoreKit 2 signed transaction is recorded as, once its signature was checked.
@Suite("receipt.received with a signed transaction")
struct SignedTransactionReceiptTests {
    static let receiptId = UUID(uuidString: "8A1B2C3D-0000-4000-8000-000000000001")!

    @Test func theFollowUpOfAReceiptHasOneIdWhateverTheRetry() {
        let id = SignedTransactionReceipt.followUpId(of: Self.receiptId)
        #expect(id == SignedTransactionReceipt.followUpId(of: Self.receiptId))
        #expect(id != SignedTransactionReceipt.followUpId(of: UUID()))
        #expect(id != Self.receiptId)
    }

    @Test func aVerifiedTransactionIsRecordedAsAppleSignedItAndFollowedByTheLedgersOwnVerification() {
        let verification = ReceiptVerified(
            transactionId: "2000000999", productId: Sample.productId, environment: .production, purchasedAt: Sample.start)
        let (receipt, followUp) = SignedTransactionReceipt.verified(
            ["transactionId": "2000000999", "signedTransaction": "h.p.s"], transactionId: "2000000999",
            originalTransactionId: "2000000001", verification: verification)
        #expect(receipt["transactionId"] == "2000000999")
        #expect(receipt["originalTransactionId"] == "2000000001")
        #expect(receipt["signedTransaction"] == "h.p.s", "the JWS Apple signed is kept verbatim")
        #expect(followUp == .receiptVerified(verification))
    }

    @Test func aForgedTransactionKeepsOnlyItsHashAndIsFollowedByAFailureThatIsNotRetried() {
        let (receipt, followUp) = SignedTransactionReceipt.refused(
            ["transactionId": "2000000999", "signedTransaction": "forged"], jws: "forged", reason: "untrusted chain")
        #expect(receipt["signedTransaction"] == nil, "the forged bytes are never stored")
        // SHA-256 of "forged" (sha256sum).
        #expect(receipt["receiptSha256"] == "ccdd35168ab474fa5764a526cfb83621351e23682c5075b2e18d56bddf96aa30")
        guard case .verificationFailed(let failure) = followUp else {
            Issue.record("expected verification.failed, got \(followUp)")
            return
        }
        #expect(failure.code == "signature_invalid" && !failure.retryable)
        #expect(failure.message?.contains("untrusted chain") == true)
    }
}
