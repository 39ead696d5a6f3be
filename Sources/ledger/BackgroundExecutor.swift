import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A thread of its own, at a lower priority, for `serve`'s background work that is heavy on CPU: the digest sealer
/// decodes and re-checks every new event. On the event loops its pages stalled the requests queued behind them
/// (single appends' p99: 13 ms without sealing, 40 ms with it, 16 clients on 2 cores; BENCHMARKS.md). Here the
/// kernel shares the cores with requests first, and the sealer takes what is left: under a sustained full load it
/// falls behind and catches up when the load eases; a checkpoint only ever covers what it has checked.
///
/// Work runs here under `withTaskExecutorPreference(BackgroundExecutor.shared)`; the database I/O it awaits stays on
/// the event loops.
final class BackgroundExecutor: TaskExecutor, Sendable {
    static let shared = BackgroundExecutor(niceness: 5)

    private let jobs = Mutex<[UnownedJob]>([])
    private let ready = DispatchSemaphore(value: 0)

    /// `niceness`: how much lower than the event loops' (0) the thread's priority is (setpriority(2), 0…19).
    init(niceness: Int32) {
        let recorded = DispatchSemaphore(value: 0)
        let thread = Thread { [self] in
            // Foundation names the current thread only once `start()` has recorded it: named before, the thread kept
            // the name of the event loop that made it (seen once under load), and /proc and `top -H` did not show it.
            recorded.wait()
            #if canImport(Glibc)
            // On Linux a nice value is a thread's own, and 0 names the calling thread.
            _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, niceness)
            #endif
            Thread.current.name = "ledger-bg"  // as `top -H` and /proc show it
            while true {
                ready.wait()
                guard let job = jobs.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else { continue }
                job.runSynchronously(on: asUnownedTaskExecutor())
            }
        }
        thread.start()
        recorded.signal()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        jobs.withLock { $0.append(job) }
        ready.signal()
    }
}
