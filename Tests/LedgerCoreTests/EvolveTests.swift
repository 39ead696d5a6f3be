import Foundation
import LedgerCore
import Testing

@Suite("evolve and fold")
struct EvolveTests {
    @Test(arguments: OrderState.allCases)
    func everyAcceptedEventAdvancesVersionAndUpdatedAt(state: OrderState) throws {
        let history = Sample.history(to: state)
        let order = try #require(OrderDecider.fold(Sample.recorded(history)))
        #expect(order.version == history.count)
        #expect(order.updatedAt == Sample.time(history.count))
        #expect(order.createdAt == Sample.time(1))
        #expect(order.state == state)
    }

    @Test func happyPathFoldsToAFinishedOrder() throws {
        let order = try #require(OrderDecider.fold(Sample.recorded(Sample.history(to: .finished))))
        #expect(order.state == .finished)
        #expect(order.transactionId == Sample.transactionId)
        #expect(order.grantedAt == Sample.time(5))
        #expect(order.finishedAt == Sample.time(6))
        #expect(order.flags == [])
        #expect(order.refundedAt == nil)
    }

    @Test func eventsBeforeOrderCreatedFoldToNothing() {
        #expect(OrderDecider.fold([]) == nil)
        #expect(OrderDecider.evolve(nil, Sample.recorded([Sample.queued])[0]) == nil)
    }

    /// A stream decide would have refused still folds: only version and updatedAt move.
    @Test func eventOutsideTheTableOnlyAdvancesVersionAndUpdatedAt() throws {
        let events = Sample.recorded([Sample.created, Sample.granted(), Sample.created, Sample.refunded()])
        let order = try #require(OrderDecider.fold(events))
        #expect(order.state == .created)
        #expect(order.version == 4)
        #expect(order.updatedAt == Sample.time(4))
        #expect(order.grantedAt == nil && order.refundedAt == nil && order.transactionId == nil)
    }

    @Test func flagsAreRaisedOnceInTheOrderRaised() throws {
        let events = Sample.recorded([
            Sample.created, Sample.cancelled, Sample.receipt(), Sample.finished, Sample.finished, Sample.verified(),
            Sample.refunded(),
        ])
        let order = try #require(OrderDecider.fold(events))
        #expect(order.flags == [.lateReceipt, .finishedBeforeGrant, .refundedBeforeGrant])
        #expect(order.finishedAt == Sample.time(4))
    }

    @Test func foldIsEvolveAppliedInTurn() {
        let events = Sample.recorded(Sample.history(to: .refunded))
        var order: Order?
        for event in events { order = OrderDecider.evolve(order, event) }
        #expect(OrderDecider.fold(events) == order)
    }
}
