import ArgumentParser
import LedgerCore

/// The recovery schedule's options (`serve`): how often a node runs a round, when an order may be lost, how long a
/// node holds an order it is asking about. The rest of the plan is `RecoveryPlan.standard` (README, "Recovering lost
/// orders").
struct RecoveryOptions: ParsableArguments {
    @Option(name: .customLong("recovery-interval"), help: """
        Seconds between rounds of the recovery schedule: orders that may be lost are asked about their provider (补单) \
        when --providers-config has a query section (0: never; every node may run it, no order is asked by two).
        """)
    var interval = 15
    @Option(name: .customLong("recovery-payment-after"), help: "Seconds a queued payment may go unanswered before its provider is asked.")
    var paymentAfter = Int(RecoveryPlan.standard.paymentUnansweredAfter.components.seconds)
    @Option(name: .customLong("recovery-receipt-after"), help: "Seconds a receipt (or a retryable verification failure) may stay unverified before its provider is asked.")
    var receiptAfter = Int(RecoveryPlan.standard.receiptUnverifiedAfter.components.seconds)
    @Option(name: .customLong("recovery-lease"), help: "Seconds a node holds an order it is asking about; a node killed mid-question frees its orders then.")
    var lease = Int(RecoveryPlan.standard.lease.components.seconds)
    @Option(name: .customLong("recovery-person-interval"), help: "Seconds before a person may ask about the same order again through the API (429 sooner); 0: no limit.")
    var personInterval = Int(RecoveryPlan.standard.personAskInterval.components.seconds)

    func validate() throws {
        guard (0...86_400).contains(interval) else { throw ValidationError("--recovery-interval must be 0 to 86400 seconds") }
        guard (0...2_592_000).contains(paymentAfter) else { throw ValidationError("--recovery-payment-after must be 0 to 2592000 seconds") }
        guard (0...2_592_000).contains(receiptAfter) else { throw ValidationError("--recovery-receipt-after must be 0 to 2592000 seconds") }
        guard (1...86_400).contains(lease) else { throw ValidationError("--recovery-lease must be 1 to 86400 seconds") }
        guard (0...86_400).contains(personInterval) else { throw ValidationError("--recovery-person-interval must be 0 to 86400 seconds") }
    }

    /// The standard plan with these options.
    var plan: RecoveryPlan {
        var plan = RecoveryPlan.standard
        plan.paymentUnansweredAfter = .seconds(paymentAfter)
        plan.receiptUnverifiedAfter = .seconds(receiptAfter)
        plan.lease = .seconds(lease)
        plan.personAskInterval = .seconds(personInterval)
        return plan
    }
}
