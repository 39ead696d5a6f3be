import Foundation
import LedgerCore
import Testing

@Suite("allowedEvents(from:) agrees with decide")
struct AllowedEventsTests {
    /// The happy-path event of each type: the representative `decide` is asked about.
    static func example(of type: EventType) -> OrderEvent {
        switch type {
        case .orderCreated: Sample.created
        case .paymentQueued: Sample.queued
        case .receiptReceived: Sample.receipt()
        case .receiptVerified: Sample.verified()
        case .verificationFailed: Sample.failed(retryable: true)
        case .orderGranted: Sample.granted()
        case .orderFinished: Sample.finished
        case .orderCancelled: Sample.cancelled
        case .orderRefunded: Sample.refunded()
        }
    }

    static let states: [OrderState?] = [nil] + OrderState.allCases

    @Test(arguments: states)
    func everyAllowedEventHasAnAcceptedExampleAndEveryOtherIsRefused(state: OrderState?) {
        let history = state.map(Sample.history(to:)) ?? []
        let allowed = OrderDecider.allowedEvents(from: state)
        for type in EventType.allCases {
            let refusal = record(Self.example(of: type), after: history).refusal
            if allowed.contains(type) {
                #expect(refusal == nil, "\(type.rawValue) from \(state?.rawValue ?? "no order")")
            } else if type == .orderCreated {
                #expect(refusal?.code == "order_exists")
            } else {
                #expect(refusal?.code == "invalid_transition", "\(type.rawValue) from \(state?.rawValue ?? "no order")")
            }
        }
    }

    @Test(arguments: states)
    func allowedEventsAreListedInDeclarationOrder(state: OrderState?) {
        let allowed = OrderDecider.allowedEvents(from: state)
        #expect(allowed == EventType.allCases.filter(allowed.contains))
    }

    @Test func invalidTransitionNamesTheAllowedEvents() {
        let refusal = record(Sample.granted(), in: .created).refusal
        #expect(refusal == .invalidTransition(
            state: .created, event: .orderGranted, allowed: [.paymentQueued, .receiptReceived, .orderCancelled]))
        #expect(refusal?.details == [
            "state": "created", "event": "order.granted", "allowed": ["payment.queued", "receipt.received", "order.cancelled"],
        ])
    }
}

@Suite("Refusal codes, messages and details")
struct RefusalTests {
    static let cases: [(Refusal, String, [String: JSONValue])] = [
        (.orderExists(orderId: "o-1"), "order_exists", ["orderId": "o-1"]),
        (.invalidTransition(state: nil, event: .orderGranted, allowed: [.orderCreated]), "invalid_transition",
         ["state": .null, "event": "order.granted", "allowed": ["order.created"]]),
        (.transactionBoundElsewhere(transactionId: "t-1", orderId: "o-2"), "transaction_bound_elsewhere",
         ["transactionId": "t-1", "orderId": "o-2"]),
        (.transactionMismatch(expected: nil, actual: "t-2"), "transaction_mismatch", ["expected": .null, "actual": "t-2"]),
        (.transactionMismatch(expected: "t-1", actual: "t-2"), "transaction_mismatch", ["expected": "t-1", "actual": "t-2"]),
        (.productMismatch(expected: "p-1", actual: "p-2"), "product_mismatch", ["expected": "p-1", "actual": "p-2"]),
        (.environmentMismatch(expected: .production, actual: .sandbox), "environment_mismatch",
         ["expected": "production", "actual": "sandbox"]),
        (.accountMismatch(expected: "a-1", actual: "a-2"), "account_mismatch", ["expected": "a-1", "actual": "a-2"]),
        (.alreadyGranted(transactionId: "t-1", orderId: "o-1"), "already_granted", ["transactionId": "t-1", "orderId": "o-1"]),
    ]

    @Test(arguments: cases)
    func refusalSaysWhatWasExpected(refusal: Refusal, code: String, details: [String: JSONValue]) {
        #expect(refusal.code == code)
        #expect(refusal.details == details)
        #expect(!refusal.message.isEmpty)
    }

    @Test func messagesNameTheFacts() {
        #expect(Refusal.accountMismatch(expected: "a-1", actual: "a-2").message
            == "the grant is for account a-2, but the order belongs to account a-1")
        #expect(Refusal.invalidTransition(state: .created, event: .orderGranted, allowed: [.paymentQueued]).message
            == "order.granted is not accepted in state created; accepted: payment.queued")
    }
}
