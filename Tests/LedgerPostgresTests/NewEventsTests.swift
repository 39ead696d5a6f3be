@testable import LedgerPostgres
import LedgerTestSupport
import Testing

/// `NewEvents`, the webhooks' loop's wake-up: a commit ends the wait, whether it came before the wait began or during
/// it. Each wait here is ten minutes unless a commit ends it; the time limit turns a missed wake-up into a failure.
@Suite("Store: word of new events ends the webhooks' wait")
struct NewEventsTests {
    @Test(.timeLimit(.minutes(1))) func aCommitBeforeTheWaitEndsItAtOnceAndOnlyOnce() async {
        let events = NewEvents()
        events.committed()
        events.committed()
        await events.wait(atMost: .seconds(600))
        // Taken by the wait above: the next one lasts its (short) interval.
        let started = ContinuousClock.now
        await events.wait(atMost: .milliseconds(200))
        #expect(ContinuousClock.now - started >= .milliseconds(200))
    }

    @Test(.timeLimit(.minutes(1))) func aCommitDuringTheWaitEndsIt() async {
        let events = NewEvents()
        let waiting = Task { await events.wait(atMost: .seconds(600)) }
        #expect(await eventually(within: .seconds(30)) { events.isWaiting })
        events.committed()
        await waiting.value
    }
}
