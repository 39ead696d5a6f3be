import Foundation
import LedgerCore
import LedgerProviders

/// An order waiting for its payment, and what a verified provider message leads to on it (`ProviderFollowUp`, where
/// the ledger compares what the provider signed with the order): so a provider's test checks a fact by the rule that
/// judges it, not by the field alone.
enum WaitingOrder {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)

    /// `order-1`, created for `amount` with `provider` and payment queued, then `events`.
    static func of(
        _ amount: Money, provider: Provider, productId: String = "gems.100", appAccountToken: UUID? = nil,
        then events: [OrderEvent] = []
    ) -> Order? {
        let history: [OrderEvent] = [
            .created(OrderCreated(
                accountId: "acct-1", productId: productId, amount: amount, provider: provider, appAccountToken: appAccountToken)),
            .paymentQueued(PaymentQueued()),
        ] + events
        return OrderDecider.fold(history.enumerated().map { index, event in
            RecordedOrderEvent(orderId: "order-1", version: index + 1, event: event, recordedAt: start.addingTimeInterval(Double(index)))
        })
    }

    /// The events `message` leads to on `order`, and the refusal that stopped them, if one did.
    static func followUp(_ message: ProviderMessage, on order: Order?) -> ProviderFollowUp.Outcome? {
        order.map { ProviderFollowUp.events(for: $0, facts: [message.fact]) }
    }
}
