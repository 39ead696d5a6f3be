import ArgumentParser
import Foundation
import LedgerCore
import LedgerWebhooks

/// How `serve` sends webhooks (README, "Webhooks"). Every node that serves sends; one endpoint is sent to by one node
/// at a time.
struct WebhookOptions: ParsableArguments {
    @Option(name: .customLong("webhook-allow-hosts"), help: """
        Comma-separated host names, addresses or CIDRs webhooks may be sent to although they are loopback, link-local \
        or private (default: $LEDGER_WEBHOOK_ALLOW_HOSTS, else none).
        """)
    var allowHosts: String?
    @Option(name: .customLong("webhook-timeout"), help: "Seconds a receiver has to answer a delivery before it is tried again.")
    var timeout = 15
    @Option(name: .customLong("webhook-interval"), help: "Milliseconds between two looks for events to queue and deliveries due. An append this node commits starts the next look early (no sooner than a tenth of this, at most 100 ms, after the last); another node's events are sent about this long after they are recorded.")
    var intervalMilliseconds = 250

    func validate() throws {
        guard (1...300).contains(timeout) else { throw ValidationError("--webhook-timeout must be 1 to 300 seconds") }
        guard (10...60_000).contains(intervalMilliseconds) else {
            throw ValidationError("--webhook-interval must be 10 to 60000 milliseconds")
        }
        _ = try policy()
    }

    var interval: Duration { .milliseconds(intervalMilliseconds) }

    func policy() throws -> WebhookAddressPolicy {
        let text = allowHosts ?? ProcessInfo.processInfo.environment["LEDGER_WEBHOOK_ALLOW_HOSTS"] ?? ""
        do {
            return try WebhookAddressPolicy(allow: text.split(separator: ",").map(String.init))
        } catch {
            throw ValidationError("--webhook-allow-hosts: \(error)")
        }
    }

    func settings() throws -> WebhookDispatcher.Settings {
        var settings = WebhookDispatcher.Settings()
        settings.timeout = .seconds(timeout)
        // A node holds an endpoint through a batch: up to eight rounds of attempts, one after another.
        settings.lease = .seconds(max(10, 10 * timeout))
        settings.policy = try policy()
        return settings
    }
}
