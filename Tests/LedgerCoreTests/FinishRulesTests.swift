import Foundation
import LedgerCore
import Testing

@Suite("order.finished")
struct FinishRulesTests {
    @Test func finishAfterTheGrantFinishesTheOrder() throws {
        let order = try #require(record(Sample.finished, in: .granted).order)
        #expect(order.state == .finished)
        #expect(order.finishedAt == Sample.time(order.version))
        #expect(order.flags == [])
    }

    @Test func finishAfterTheGrantIsAcceptedEvenWhenFinishedEarly() throws {
        let history = Sample.history(to: .verified) + [Sample.finished, Sample.granted()]
        let order = try #require(record(Sample.finished, after: history).order)
        #expect(order.state == .finished)
        #expect(order.flags == [.finishedBeforeGrant])
    }

    @Test(arguments: [OrderState.rejected, .cancelled, .refunded])
    func finishOfAnEndedOrderIsRecordedWithoutChangingTheState(state: OrderState) throws {
        let order = try #require(record(Sample.finished, in: state).order)
        #expect(order.state == state)
        #expect(order.finishedAt == Sample.time(order.version))
        #expect(order.flags == [])
    }

    @Test(arguments: [OrderState.receiptReceived, .verificationFailed, .verified])
    func finishBeforeTheGrantIsRecordedAndFlagged(state: OrderState) throws {
        let order = try #require(record(Sample.finished, in: state).order)
        #expect(order.state == state)
        #expect(order.finishedAt == Sample.time(order.version))
        #expect(order.flags == [.finishedBeforeGrant])
    }

    @Test(arguments: [OrderState.rejected, .cancelled, .refunded, .receiptReceived, .verificationFailed, .verified])
    func secondFinishBeforeTheGrantIsRefused(state: OrderState) {
        let outcome = record(Sample.finished, after: Sample.history(to: state) + [Sample.finished])
        #expect(outcome.refusal?.code == "invalid_transition")
    }

    @Test(arguments: [OrderState.created, .paymentQueued, .finished])
    func finishWithoutAReceiptOrTwiceIsRefused(state: OrderState) {
        #expect(record(Sample.finished, in: state).refusal?.code == "invalid_transition")
    }

    @Test func refusedSecondFinishDoesNotOfferFinishAgain() {
        let outcome = record(Sample.finished, after: Sample.history(to: .rejected) + [Sample.finished])
        #expect(outcome.refusal == .invalidTransition(state: .rejected, event: .orderFinished, allowed: []))
    }
}
