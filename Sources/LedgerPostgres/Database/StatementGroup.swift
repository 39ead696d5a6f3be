import Synchronization

/// Work that many requests need of the database at once, done in one statement: those that arrive while a group is
/// being done wait, and the first of them then does them all together — one round trip, one statement's fixed cost
/// (and for writes one commit) for the whole group. Under load that fixed cost is most of what PostgreSQL spends on a
/// small statement, and a round trip is a good part of what the service spends.
///
/// One group at a time, led by the request that found none being done, or, once one is done, by the longest waiting
/// request, which takes every request waiting behind it (at most `largest`; two items with one `key` never share a
/// group: the second waits for the next). A leader first lets the requests its event loop has queued behind it join
/// (one `Task.yield`). Nobody waits on a timer, so a request alone is served at once, and groups grow with the load.
/// Each pool keeps one group of each kind (`SessionPool.groups`; one pool per event loop, `EventLoopPools`).
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
    }

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
    }

    let largest: Int
    private let key: @Sendable (Item) -> String?
    private let done: @Sendable (Answer) -> Bool
    private let state = Mutex(State())

    /// `key`: items with one key never share a group (nil: any may). `done`: which answers `statistics` counts.
    init(largest: Int, key: @escaping @Sendable (Item) -> String? = { _ in nil }, done: @escaping @Sendable (Answer) -> Bool) {
        self.largest = largest
        self.key = key
        self.done = done
    }

    var statistics: Statistics {
        state.withLock { state in
            var statistics = state.statistics
            statistics.busy = state.taken
            statistics.waiting = state.waiting.count
            return statistics
        }
    }

    /// `item`'s answer, from the group it joined: `together` is what a leader runs for its whole group, and answers
    /// each item in order.
    func run(_ item: Item, together: ([Item]) async -> [Answer]) async -> Answer {
        let turn = await withCheckedContinuation { continuation in
            let leads = state.withLock { state in
                guard state.busy else {
                    state.busy = true
                    return true
                }
                state.waiting.append(Waiting(item: item, continuation: continuation))
                return false
            }
            if leads { continuation.resume(returning: .lead) }
        }
        if case .answered(let answer) = turn { return answer }
        // The requests the loop read in the same turn as this one are queued behind it: one pass of the queue lets
        // them join before the group is taken (a lead taken at once would leave alone, and they would go together
        // next). A yield, not a timer: alone, a request is served at once.
        await Task.yield()
        let others = state.withLock { state in
            state.taken = true
            return takeGroup(with: item, from: &state.waiting)
        }
        let answers = await together([item] + others.map(\.item))
        for (waiting, answer) in zip(others, answers.dropFirst()) { waiting.continuation.resume(returning: .answered(answer)) }
        // Always handed on: a group left unled would hold its requests for good.
        let next = state.withLock { state -> Waiting? in
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
