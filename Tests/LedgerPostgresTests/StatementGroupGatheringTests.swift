@testable import LedgerPostgres
import LedgerTestSupport
import NIOPosix
import Synchronization
import Testing

/// A statement group's leader gathers under load (`StatementGroup`): after a group of several, the next leader waits
/// until as many are here, or until its time is up; now and then it tries for one more. Driven here without a
/// database: each group's work records the items it was given.
@Suite("Store: a group's leader gathers as many as its last group held")
struct StatementGroupGatheringTests {
    /// A group whose work records each group it is given; the first group's work waits for `release`.
    final class Groups: Sendable {
        let group: StatementGroup<Int, Int>
        let taken = Mutex<[[Int]]>([])
        let release = AsyncStream<Void>.makeStream()

        init(gatherAtMost: @escaping @Sendable (Duration) -> Duration) {
            group = StatementGroup(largest: 64, gatherAtMost: gatherAtMost) { _ in true }
        }

        func run(_ item: Int) async -> Int {
            await group.run(item) { items in
                let first = taken.withLock { taken in
                    taken.append(items)
                    return taken.count == 1
                }
                if first { for await _ in release.stream { break } }
                return items
            }
        }

        var last: [Int]? { taken.withLock { $0.last } }
    }

    /// A first group of one, held while `others` wait: they then go together, and the target becomes their number.
    private func settle(_ groups: Groups, afterAGroupOf others: [Int]) async throws {
        let first = Task { await groups.run(0) }
        // Its work begun, not only its leader chosen: a leader yields before it takes its group, and on a busy machine
        // the others once joined it there.
        #expect(await eventually(within: .seconds(120)) { groups.taken.withLock { $0.count } == 1 })
        let waiting = others.map { item in Task { await groups.run(item) } }
        #expect(await eventually(within: .seconds(120)) { groups.group.statistics.waiting == others.count })
        groups.release.continuation.yield()
        _ = await first.value
        for task in waiting { _ = await task.value }
        #expect(groups.last?.sorted() == others)
        #expect(groups.group.statistics.target == others.count)
    }

    @Test func afterAGroupOfThreeTheNextLeaderWaitsUntilThreeAreHere() async throws {
        let groups = Groups(gatherAtMost: { _ in .seconds(600) })
        try await settle(groups, afterAGroupOf: [1, 2, 3])
        let leader = Task { await groups.run(4) }
        #expect(await eventually(within: .seconds(120)) { groups.group.statistics.gathering })
        let second = Task { await groups.run(5) }
        #expect(await eventually(within: .seconds(120)) { groups.group.statistics.waiting == 1 })
        #expect(groups.group.statistics.gathering, "the leader went with two where three came before")
        let third = Task { await groups.run(6) }
        _ = (await leader.value, await second.value, await third.value)
        #expect(groups.last == [4, 5, 6])
    }

    @Test func aLeaderWhoseTimeRunsOutGoesWithWhatCameAndTheTargetFallsToIt() async throws {
        let groups = Groups(gatherAtMost: { _ in .zero })
        try await settle(groups, afterAGroupOf: [1, 2, 3])
        // Two queued on one loop in one turn: the first leads, the second joins at its yield, and no third comes.
        await withTaskExecutorPreference(EventLoopExecutor(MultiThreadedEventLoopGroup.singleton.next())) {
            await withTaskGroup(of: Int.self) { group in
                group.addTask { await groups.run(4) }
                group.addTask { await groups.run(5) }
                for await _ in group {}
            }
        }
        #expect(groups.last?.sorted() == [4, 5])
        #expect(groups.group.statistics.target == 2, "a gathering that timed out left the target above what came")
    }

    @Test func afterEnoughGroupsOfOneSizeTheTargetTriesForOneMore() async throws {
        let groups = Groups(gatherAtMost: { _ in .seconds(600) })
        try await settle(groups, afterAGroupOf: [1, 2])
        // The group of [1, 2] was the first of its size; each further one is gathered, leader then follower.
        for round in 1..<StatementGroup<Int, Int>.probeEvery {
            #expect(groups.group.statistics.target == 2)
            let leader = Task { await groups.run(10 * round) }
            #expect(await eventually(within: .seconds(120)) { groups.group.statistics.gathering })
            _ = (await groups.run(10 * round + 1), await leader.value)
            #expect(groups.last == [10 * round, 10 * round + 1])
        }
        #expect(groups.group.statistics.target == 3)
    }
}
