import Foundation
import LedgerCore
@testable import LedgerPostgres
import LedgerTestSupport
import NIOPosix
import Testing

/// The stream versions a pool's requests ask for are read together (`VersionGroup`): every request waiting while a
/// group is read is in the next one, and each gets its own order's version.
@Suite("Store: stream versions read together")
struct StreamVersionGroupTests {
    @Test func versionsAskedMeanwhileAreReadInOneStatementEachAnsweredItsOwn() async throws {
        try await TestDatabase.withClient(poolSize: 1) { client in
            let ledger = Ledger(client: client)
            let metadata = EventMetadata(actor: "test-suite")
            let lifecycle = Lifecycle()
            _ = try await ledger.record(orderId: "three", events: Array(lifecycle.happyPath.prefix(3)), metadata: metadata)
            _ = try await ledger.record(orderId: "one", events: [Lifecycle().created], metadata: metadata)
            // The pool's one session held: the first read leads and waits for it, the others wait for the next group.
            let held = AsyncStream<Void>.makeStream()
            let released = AsyncStream<Void>.makeStream()
            let holder = Task {
                try await client.withConnection { _ in
                    held.continuation.yield()
                    for await _ in released.stream { break }
                }
            }
            for await _ in held.stream { break }
            let asked = ["three", "one", "missing", "three", "one", "missing"]
            let store = ledger.store
            let versions = try await withThrowingTaskGroup(of: (Int, Int?).self) { group in
                // The first has taken its group (and waits for the session) before the others come.
                group.addTask { (0, try await store.streamVersion(.order(asked[0]))) }
                let taken = await eventually { store.versionGroup.statistics.busy }
                for (index, orderId) in asked.enumerated().dropFirst() {
                    group.addTask { (index, try await store.streamVersion(.order(orderId))) }
                }
                let waited = await eventually { store.versionGroup.statistics.waiting == asked.count - 1 }
                let gathered = taken && waited
                released.continuation.yield()
                try await holder.value
                #expect(gathered, "the reads behind the first never all waited")
                var versions = [Int?](repeating: nil, count: asked.count)
                for try await (index, version) in group { versions[index] = version }
                return versions
            }
            #expect(versions == [3, 1, nil, 3, 1, nil])
            #expect(store.versionGroup.statistics.largestGroup == asked.count - 1)
        }
    }

    /// Requests the event loop reads in one turn are queued on it together: the first leads, and waits one pass of the
    /// queue for the others, so all are read in one statement (led at once, it would go alone, the others after it).
    @Test func versionsAskedInOneTurnOfTheEventLoopAreReadInOneStatement() async throws {
        try await TestDatabase.withClient(poolSize: 1) { client in
            let ledger = Ledger(client: client)
            _ = try await ledger.record(orderId: "one", events: [Lifecycle().created], metadata: EventMetadata(actor: "test-suite"))
            let store = ledger.store
            let asked = 8
            // The children are queued on the loop by a task running on it: none runs before the parent awaits them.
            let versions = try await withTaskExecutorPreference(EventLoopExecutor(MultiThreadedEventLoopGroup.singleton.next())) {
                try await withThrowingTaskGroup(of: Int?.self) { group in
                    for _ in 0..<asked { group.addTask { try await store.streamVersion(.order("one")) } }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
            }
            #expect(versions == Array(repeating: 1, count: asked))
            #expect(store.versionGroup.statistics.largestGroup == asked)
        }
    }
}
