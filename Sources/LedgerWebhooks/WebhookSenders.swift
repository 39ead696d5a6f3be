import Foundation
import LedgerPostgres
import Synchronization

/// The senders the dispatcher's loop keeps from round to round, one per endpoint. A round ends whenever an endpoint's
/// queue runs dry, and a sender made per round opened its connections — TLS handshakes and all — again at every tick
/// with something due: up to 16 a tick, four ticks a second, against the receiver. A kept sender is made again when
/// its endpoint's URL changed, and once it is `maximumAge` old, so that its host is resolved and checked
/// (`WebhookAddressPolicy`) again; one not used for that long (its endpoint removed, or quiet) is shut down. A sender
/// whose host did not resolve, or resolved to a refused address, is not kept: the next round asks again.
///
/// One node sends to an endpoint from one task at a time (`WebhookDispatcher`'s busy set), so the sender replaced or
/// shut down here is never in use.
final class WebhookSenders: Sendable {
    static let maximumAge: TimeInterval = 60

    private struct Kept: Sendable {
        let sender: WebhookSender
        let made: Date
        var used: Date
    }

    private let kept = Mutex<[String: Kept]>([:])

    /// `target`'s sender at `now`: the one kept when it sends to the same URL and is younger than `maximumAge`, else a
    /// new one (`make`), the one it replaces shut down.
    func sender(for target: WebhookTarget, now: Date, make: () async -> WebhookSender) async -> WebhookSender {
        let current = kept.withLock { kept -> Kept? in
            kept[target.name]?.used = now
            return kept[target.name]
        }
        if let current, current.sender.url == target.url, now.timeIntervalSince(current.made) < Self.maximumAge {
            return current.sender
        }
        let sender = await make()
        kept.withLock { $0[target.name] = sender.resolved ? Kept(sender: sender, made: now, used: now) : nil }
        await current?.sender.shutdown()
        return sender
    }

    /// Shuts down the senders not used for `maximumAge` at `now`, but those of the endpoints being sent to (`busy`).
    func shutDownIdle(at now: Date, except busy: Set<String>) async {
        let idle = kept.withLock { kept -> [WebhookSender] in
            let names = kept.filter { !busy.contains($0.key) && now.timeIntervalSince($0.value.used) >= Self.maximumAge }.map(\.key)
            return names.compactMap { kept.removeValue(forKey: $0)?.sender }
        }
        for sender in idle { await sender.shutdown() }
    }

    /// Shuts every sender down (the loop has ended: none is in use).
    func shutDownAll() async {
        let all = kept.withLock { kept in
            defer { kept = [:] }
            return kept.values.map(\.sender)
        }
        for sender in all { await sender.shutdown() }
    }
}
