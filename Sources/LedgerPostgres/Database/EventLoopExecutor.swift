import NIOCore
import NIOPosix

/// An event loop as a task executor. A task that prefers it (`withTaskExecutorPreference`, `Task(executorPreference:)`)
/// runs its nonisolated code on the loop's thread, where its connections' reads and writes complete, and moves between
/// nonisolated functions without queueing itself again.
///
/// Why not only NIO's global-executor hook (`serve` installs it): the hook runs every job on a loop *as a serial
/// executor*, so each call into, or return from, a nonisolated async function counts as leaving that executor and
/// queues the task on the loop once more. Under 16 clients reading histories that second trip through the loop's queue
/// was 12 % of `serve`'s CPU (perf, BENCHMARKS.md "Stop 50"). A job run here runs on the generic executor with this
/// task executor, so such a call stays inline.
public final class EventLoopExecutor: TaskExecutor, Sendable {
    public let loop: any EventLoop

    public init(_ loop: any EventLoop) {
        self.loop = loop
    }

    /// The loop running the calling thread, if it is one of NIO's.
    public static var current: EventLoopExecutor? {
        MultiThreadedEventLoopGroup.currentEventLoop.map(EventLoopExecutor.init)
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        loop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
