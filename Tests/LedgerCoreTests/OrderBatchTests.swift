import Foundation
import LedgerCore
import Testing

/// One append's decision (`OrderBatch.decide`): each event against the order the batch left so far, bindings carried
/// forward, one refusal refusing the whole batch.
@Suite("A batch of events, decided as one append")
struct OrderBatchTests {
    static let recordedAt = Sample.start.addingTimeInterval(3_600)

    static func start(after history: [OrderEvent] = [], bindings: [String: TransactionBinding] = [:]) -> OrderBatch.Start {
        OrderBatch.Start(
            orderId: Sample.orderId, order: OrderDecider.fold(Sample.recorded(history)), version: history.count,
            recordedAt: recordedAt, bindings: bindings)
    }

    @Test func aWholeLifeInOneBatchEndsWhereTheSameEventsOneByOneEnd() throws {
        let life = Sample.history(to: .finished)
        let order = try #require(try OrderBatch.decide(life, from: Self.start()))
        #expect(order.state == .finished)
        #expect(order.version == life.count)
        #expect(order.grantedAt == Self.recordedAt, "every event of a batch is recorded at the append's one time")
        let oneByOne = try #require(OrderDecider.fold(Sample.recorded(life)))
        #expect(order.state == oneByOne.state && order.transactionId == oneByOne.transactionId)
    }

    @Test func eachEventIsDecidedAfterTheOnesBeforeItInTheBatch() throws {
        // A grant is only allowed after verification: in one batch, the verification before it counts.
        let order = try #require(try OrderBatch.decide(
            [Sample.verified(), Sample.granted()], from: Self.start(after: Sample.history(to: .receiptReceived))))
        #expect(order.state == .granted)
        #expect(order.version == Sample.history(to: .receiptReceived).count + 2)
    }

    @Test func oneRefusalRefusesTheBatchAndNamesTheEvent() {
        let events = [Sample.verified(), Sample.granted(to: "acct-2")]
        #expect(throws: RefusedEvent(
            refusal: .accountMismatch(expected: Sample.accountId, actual: "acct-2"), event: Sample.granted(to: "acct-2"))
        ) {
            try OrderBatch.decide(events, from: Self.start(after: Sample.history(to: .receiptReceived)))
        }
    }

    @Test func aTransactionBoundToAnotherOrderIsRefused() {
        let taken = TransactionBinding(transactionId: Sample.transactionId, orderId: "order-2", granted: true)
        #expect(throws: RefusedEvent(
            refusal: .transactionBoundElsewhere(transactionId: Sample.transactionId, orderId: "order-2"), event: Sample.receipt())
        ) {
            try OrderBatch.decide(
                [Sample.receipt(), Sample.verified(), Sample.granted()],
                from: Self.start(after: Sample.history(to: .paymentQueued), bindings: [Sample.transactionId: taken]))
        }
    }

    /// The batch's own grant binds the transaction: a second grant later in the same batch is told it was credited,
    /// exactly as a second append would be.
    @Test func aGrantInTheBatchBindsItsTransactionForTheEventsAfterIt() {
        #expect(throws: RefusedEvent(
            refusal: .alreadyGranted(transactionId: Sample.transactionId, orderId: Sample.orderId), event: Sample.granted())
        ) {
            try OrderBatch.decide(
                [Sample.granted(), Sample.granted()], from: Self.start(after: Sample.history(to: .verified)))
        }
    }

    @Test func anEmptyBatchLeavesTheOrderAsFound() throws {
        #expect(try OrderBatch.decide([], from: Self.start()) == nil)
        let granted = try OrderBatch.decide([], from: Self.start(after: Sample.history(to: .granted)))
        #expect(granted?.state == .granted)
    }
}
