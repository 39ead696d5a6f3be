import NIOCore
import NIOPosix
import Synchronization

/// Work that many requests need of the database at once, done in one statement: those that arrive while a group is
/// being done wait, and the first of them then does them all together — one round trip, one statement's fixed cost
/// (and for writes one commit) for the whole group. Under load that fixed cost is most of what PostgreSQL spends on a
/// small statement, and a round trip is a good part of what the service spends.
///
/// One group at a time, led by the request that found none being done, or, once one is done, by the longest waiting
/// request, which takes every request waiting behind it (at most `largest`; two items with one `key` never share a
/// group: the second waits for the next). A leader first lets the requests its event loop has queued behind it join
/// (one `Task.yield`). Each pool keeps one group of each kind (`SessionPool.groups`; one pool per event loop,
/// `EventLoopPools`).
///
/// Under load a leader also gathers: it waits until as many requests are here as its last group held (`target`), or
/// at most as long as that group's work took (`gatherAtMost`: waiting longer costs more than a second statement for
/// the latecomers). Clients that each wait for their answer come back in cohorts: half of a loop's clients waited while
/// the other half's group was written, then the reverse, and two half-sized groups alternated for good, each paying a
/// statement's fixed cost for half the requests (BENCHMARKS.md, stop 59: at 16 clients ~4 a statement where 8 came
/// back within its time). Every `probeEvery` groups the target tries for one more, so groups grow to the load; a
/// gathering whose time runs out sets it to what came. A request after a group of one never waits: alone, it is
/// served at once.
///
/// The leader does the group within its own request's deadline (`Deadline.remaining`); the others waiting behind it
/// arrived after it, so their own deadlines end later.
final class StatementGroup<Item: Sendable, Answer: Sendable>: Sendable {
    struct Statistics: Sendable {
        /// The most items one group carried.
        var largestGroup = 0
        /// The answers that counted as done (`done`): how tests see what the groups did.
        var done = 0
        /// Whether a group is being done now (taken by its leader), and how many wait for the next.
        var busy = false
        var waiting = 0
        /// How many a leader gathers before it takes its group (0 or 1: it takes what is here), and whether one is
        /// gathering now.
        var target = 0
        var gathering = false
    }

    /// How many groups the target holds before it tries for one more.
    static var probeEvery: Int { 16 }

    private enum Turn {
        case answered(Answer)
        /// No group is being done now: do the next one.
        case lead
    }

    private struct Waiting {
        let item: Item
        let continuation: CheckedContinuation<Turn, Never>
    }

    private struct State {
        var waiting: [Waiting] = []
        /// A leader has the turn (it may not have taken its group yet).
        var busy = false
        /// The leader has taken its group: whoever comes now waits for the next.
        var taken = false
        var statistics = Statistics()
        /// How many a leader gathers (`Statistics.target`), and the groups since it last tried for one more.
        var target = 0
        var sinceProbe = 0
        /// How long the last group's work took: what a leader's gathering may last (`gatherAtMost`).
        var lastWork: Duration = .zero
        /// The leader gathering: told true when its target is here, false when its time is up (`round` tells its
        /// timer from a later leader's).
        var gathering: CheckedContinuation<Bool, Never>?
        var round = 0

        /// The gathering leader, to be told its target is here, once it is.
        mutating func gatheringWhenComplete() -> CheckedContinuation<Bool, Never>? {
            guard let gathering, waiting.count + 1 >= target else { return nil }
            self.gathering = nil
            return gathering
        }

        /// The target after a group of `size` (`gathered`: nil, no gathering; true, its target came; false, its
        /// time ran out).
        mutating func settleTarget(after size: Int, gathered: Bool?, largest: Int) {
            sinceProbe += 1
            if size < 2 || gathered == false {
                target = size < 2 ? 0 : size
                sinceProbe = 0
            } else if sinceProbe >= StatementGroup.probeEvery {
                target = min(largest, size + 1)
                sinceProbe = 0
            } else {
                target = max(target, size)
            }
        }
    }

    let largest: Int
    private let gatherAtMost: (@Sendable (Duration) -> Duration)?
    private let key: @Sendable (Item) -> String?
    private let done: @Sendable (Answer) -> Bool
    private let state = Mutex(State())

    /// `key`: items with one key never share a group (nil: any may). `gatherAtMost`: how long a leader may gather,
    /// given how long the last group's work took (nil: leaders never gather). `done`: which answers `statistics` counts.
    init(
        largest: Int, key: @escaping @Sendable (Item) -> String? = { _ in nil },
        gatherAtMost: (@Sendable (Duration) -> Duration)? = nil, done: @escaping @Sendable (Answer) -> Bool
    ) {
        self.largest = largest
        self.gatherAtMost = gatherAtMost
        self.key = key
        self.done = done
    }

    var statistics: Statistics {
        state.withLock { state in
            var statistics = state.statistics
            statistics.busy = state.taken
            statistics.waiting = state.waiting.count
            statistics.target = state.target
            statistics.gathering = state.gathering != nil
            return statistics
        }
    }

    /// `item`'s answer, from the group it joined: `together` is what a leader runs for its whole group, and answers
    /// each item in order.
    func run(_ item: Item, together: ([Item]) async -> [Answer]) async -> Answer {
        let turn = await withCheckedContinuation { continuation in
            let (leads, gathered) = state.withLock { state in
                guard state.busy else {
                    state.busy = true
                    return (true, nil as CheckedContinuation<Bool, Never>?)
                }
                state.waiting.append(Waiting(item: item, continuation: continuation))
                return (false, state.gatheringWhenComplete())
            }
            if leads { continuation.resume(returning: .lead) }
            gathered?.resume(returning: true)
        }
        if case .answered(let answer) = turn { return answer }
        // The requests the loop read in the same turn as this one are queued behind it: one pass of the queue lets
        // them join before the group is taken (a lead taken at once would leave alone, and they would go together
        // next).
        await Task.yield()
        let gathered = await gather()
        let others = state.withLock { state in
            state.taken = true
            return takeGroup(with: item, from: &state.waiting)
        }
        let started = ContinuousClock.now
        let answers = await together([item] + others.map(\.item))
        let work = ContinuousClock.now - started
        for (waiting, answer) in zip(others, answers.dropFirst()) { waiting.continuation.resume(returning: .answered(answer)) }
        // Always handed on: a group left unled would hold its requests for good.
        let next = state.withLock { state -> Waiting? in
            state.lastWork = work
            state.settleTarget(after: answers.count, gathered: gathered, largest: largest)
            state.statistics.largestGroup = max(state.statistics.largestGroup, answers.count)
            state.statistics.done += answers.count(where: done)
            state.taken = false
            guard !state.waiting.isEmpty else {
                state.busy = false
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.continuation.resume(returning: .lead)
        return answers[0]
    }

    /// Waits, when the target is more than are here, until it is here (true) or the gathering's time is up (false);
    /// nil when there was nothing to wait for.
    private func gather() async -> Bool? {
        guard let gatherAtMost else { return nil }
        let limit = state.withLock { state in state.waiting.count + 1 < state.target ? gatherAtMost(state.lastWork) : nil }
        guard let limit else { return nil }
        return await withCheckedContinuation { continuation in
            let round = state.withLock { state -> Int? in
                guard state.waiting.count + 1 < state.target else { return nil }
                state.round += 1
                state.gathering = continuation
                return state.round
            }
            guard let round else { return continuation.resume(returning: true) }
            // A timer on the leader's loop (any loop for a caller on none), not a sleeping task: cheap, and dropped
            // unnoticed when the target comes first.
            let loop = MultiThreadedEventLoopGroup.currentEventLoop ?? NIOSingletons.posixEventLoopGroup.any()
            loop.scheduleTask(in: TimeAmount(limit)) { [self] in
                let timedOut = state.withLock { state -> CheckedContinuation<Bool, Never>? in
                    guard state.round == round, let gathering = state.gathering else { return nil }
                    state.gathering = nil
                    return gathering
                }
                timedOut?.resume(returning: false)
            }
        }
    }

    /// The waiting items to do with `own`, taken from the queue: the longest waiting first, one per key.
    private func takeGroup(with own: Item, from waiting: inout [Waiting]) -> [Waiting] {
        guard !waiting.isEmpty else { return [] }
        var keys: Set<String> = []
        if let key = key(own) { keys.insert(key) }
        var taken: [Waiting] = []
        var kept: [Waiting] = []
        for next in waiting {
            let fits = taken.count < largest - 1 && key(next.item).map { keys.insert($0).inserted } ?? true
            if fits { taken.append(next) } else { kept.append(next) }
        }
        waiting = kept
        return taken
    }
}

/// A pool's groups (`SessionPool.groups`), one per kind of work, each made on first use: the requests on one pool
/// share them.
final class StatementGroups: Sendable {
    private let groups = Mutex<[ObjectIdentifier: any Sendable]>([:])

    /// The pool's group of this kind, made by `make` the first time.
    func group<Item, Answer>(_ make: () -> StatementGroup<Item, Answer>) -> StatementGroup<Item, Answer> {
        groups.withLock { groups in
            let kind = ObjectIdentifier(StatementGroup<Item, Answer>.self)
            if let group = groups[kind] as? StatementGroup<Item, Answer> { return group }
            let group = make()
            groups[kind] = group
            return group
        }
    }
}
