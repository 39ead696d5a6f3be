import Foundation
import LedgerCore
import Testing

/// The transition table of docs/domain.md ("Transitions"), written out here by hand rather than derived from the
/// code: `decide` and `allowedEvents(from:)` are both checked against it, so a change to either that the document
/// does not make fails here.
@Suite("The decider accepts what docs/domain.md's transition table accepts, and nothing else")
struct AllowedEventsTests {
    /// docs/domain.md, table "Transitions", row by row: for each event, every `from` state of a row that accepts it
    /// (nil = no order). Rows that only refuse (`invalid_transition`, `order_exists`) add no state.
    static let documentedTable: [(event: EventType, from: [OrderState?])] = [
        // | `order.created` | no order | `created` |
        (.orderCreated, [nil]),
        // | `payment.queued` | `created` | `payment_queued` |
        (.paymentQueued, [.created]),
        // | `receipt.received` | `created`, `payment_queued`, `verification_failed` | `receipt_received` |
        // | | `cancelled` | `receipt_received`, flag `late_receipt` |
        // | | `receipt_received`, `verified`, `granted`, `finished`, `refunded` | — (a resubmission) |
        (.receiptReceived, [.created, .paymentQueued, .verificationFailed,
                            .cancelled,
                            .receiptReceived, .verified, .granted, .finished, .refunded]),
        // | `receipt.verified` | `receipt_received`, `verification_failed` | `verified` |
        (.receiptVerified, [.receiptReceived, .verificationFailed]),
        // | `verification.failed` | `receipt_received`, `verification_failed` | … |
        (.verificationFailed, [.receiptReceived, .verificationFailed]),
        // | `order.granted` | `verified` | `granted` |
        (.orderGranted, [.verified]),
        // | `order.finished` | `granted` | `finished` |
        // | | `rejected`, `cancelled`, `refunded` without `finishedAt` | — |
        // | | `receipt_received`, `verification_failed`, `verified` without `finishedAt` | —, flag `finished_before_grant` |
        (.orderFinished, [.granted,
                          .rejected, .cancelled, .refunded,
                          .receiptReceived, .verificationFailed, .verified]),
        // | `order.cancelled` | `created`, `payment_queued` | `cancelled` |
        (.orderCancelled, [.created, .paymentQueued]),
        // | `order.refunded` | `granted`, `finished` | `refunded` |
        // | | `verified` | `refunded`, flag `refunded_before_grant` |
        (.orderRefunded, [.granted, .finished,
                          .verified]),
        // | `order.refund_reversed` | `refunded` | back to `verified`, `granted` or `finished` |
        (.refundReversed, [.refunded]),
        // | `provider.notified` | any (an order exists) | — (evidence; what follows is recorded as its own events) |
        (.providerNotified, OrderState.allCases),
    ]

    /// Whether the documented table has a row accepting `event` from `state`.
    static func documentedAccepts(_ event: EventType, from state: OrderState?) -> Bool {
        documentedTable.contains { $0.event == event && $0.from.contains(state) }
    }

    /// The happy-path event of each type: the representative `decide` is asked about. Its data agrees with the
    /// order (same transaction, account, product), so only the transition itself can be refused.
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
        case .refundReversed: .refundReversed(RefundReversed(transactionId: Sample.transactionId))
        case .providerNotified: Sample.providerFact(.payment)
        }
    }

    static let states: [OrderState?] = [nil] + OrderState.allCases

    @Test func theTableNamesEveryEventTypeOnce() {
        #expect(Self.documentedTable.map(\.event) == EventType.allCases)
    }

    /// Every (state, event type) pair: `decide` accepts the example exactly when a documented row does, and refuses
    /// it with the documented code otherwise. States are reached by their shortest history (no `finishedAt` but in
    /// `finished`), which is what the table's "without `finishedAt`" rows need.
    @Test(arguments: states)
    func decideAcceptsExactlyTheDocumentedTransitions(state: OrderState?) {
        let history = state.map(Sample.history(to:)) ?? []
        for type in EventType.allCases {
            let refusal = record(Self.example(of: type), after: history).refusal
            let pair = "\(type.rawValue) from \(state?.rawValue ?? "no order")"
            if Self.documentedAccepts(type, from: state) {
                #expect(refusal == nil, "documented as accepted: \(pair)")
            } else if type == .orderCreated {
                #expect(refusal?.code == "order_exists", "\(pair)")
            } else {
                #expect(refusal?.code == "invalid_transition", "documented as refused: \(pair)")
            }
        }
    }

    /// `allowedEvents(from:)` (what an `invalid_transition` refusal lists) is the documented row set for the
    /// state, in `EventType.allCases` order.
    @Test(arguments: states)
    func allowedEventsAreTheDocumentedOnesInDeclarationOrder(state: OrderState?) {
        // provider.notified is documented as accepted everywhere but not listed: clients cannot post it.
        let documented = EventType.allCases.filter { Self.documentedAccepts($0, from: state) && $0 != .providerNotified }
        #expect(OrderDecider.allowedEvents(from: state) == documented, "from \(state?.rawValue ?? "no order")")
    }

    /// The `order.finished` rows that apply only "without `finishedAt`": once a finish is recorded, a second one is
    /// an `invalid_transition`, and the refusal's list leaves `order.finished` out (docs/domain.md, below the table).
    @Test(arguments: [OrderState.rejected, .cancelled, .refunded, .receiptReceived, .verificationFailed, .verified])
    func aSecondFinishOutsideGrantedIsRefusedAndNotListed(state: OrderState) {
        let history = Sample.history(to: state) + [Sample.finished]
        let documented = EventType.allCases.filter {
            Self.documentedAccepts($0, from: state) && $0 != .orderFinished && $0 != .providerNotified
        }
        #expect(record(Sample.finished, after: history).refusal
            == .invalidTransition(state: state, event: .orderFinished, allowed: documented))
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
        (.appAccountTokenMismatch(expected: AppAccountToken.forOrderId("order-1"), actual: AppAccountToken.forOrderId("order-2")),
         "account_mismatch", ["expected": "ac611565-7e47-5acf-a5d1-e8541cf37759",
                              "actual": .string(AppAccountToken.forOrderId("order-2").lowercasedText)]),
        (.alreadyGranted(transactionId: "t-1", orderId: "o-1"), "already_granted", ["transactionId": "t-1", "orderId": "o-1"]),
        (.amountMismatch(expected: Money(value: 499, currency: "USD"), actual: Money(value: 500, currency: "USD")), "amount_mismatch",
         ["expected": ["value": 499, "currency": "USD"], "actual": ["value": 500, "currency": "USD"]]),
        (.priceNotInMinorUnits(
            expected: Money(value: 499, currency: "USD"), actual: UnconvertedPrice(milliunits: 4991, quantity: 1, currency: "USD")),
         "amount_mismatch",
         ["expected": ["value": 499, "currency": "USD"], "actual": ["milliunits": 4991, "quantity": 1, "currency": "USD"]]),
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
