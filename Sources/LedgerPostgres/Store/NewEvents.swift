import Synchronization

/// Word that this node has committed new events (`EventStore.append`), for the one loop that waits for it: the
/// webhooks' (`WebhookDispatcher`), which then looks at the feed at once instead of at its next tick. Only this node's
/// appends wake it; another node's reach it at its tick (a wake-up across nodes would be `NOTIFY`, whose queue lock
/// every committing append would then take).
///
/// An append pays one lock, and a resume when the loop is waiting.
public final class NewEvents: Sendable {
    private struct State {
        /// Events were committed since the last wait returned.
        var committed = false
        var waiter: CheckedContinuation<Void, Never>?
    }
    private let state = Mutex(State())

    public init() {}

    /// New events are committed: the waiter returns, or the next wait does at once.
    func committed() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter else {
                state.committed = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// Whether a wait is under way and no commit has come (for tests).
    var isWaiting: Bool { state.withLock { $0.waiter != nil } }

    /// Returns once new events are committed (at once if they were since the last wait), or after `interval`,
    /// whichever comes first; at once when the task is cancelled. One waiter at a time.
    public func wait(atMost interval: Duration) async {
        guard !state.withLock({ state in defer { state.committed = false }; return state.committed }) else { return }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await Task.sleep(for: interval) }
            group.addTask { await self.next() }
            await group.next()
            group.cancelAll()
        }
    }

    /// Until `committed` is called, or the task is cancelled.
    private func next() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    // Checked inside the lock: a cancellation after it finds the waiter registered (`onCancel`).
                    if state.committed || Task.isCancelled {
                        state.committed = false
                        return true
                    }
                    state.waiter = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            state.withLock { state in defer { state.waiter = nil }; return state.waiter }?.resume()
        }
    }
}
