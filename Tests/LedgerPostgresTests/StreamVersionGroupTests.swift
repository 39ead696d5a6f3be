import Foundation
import LedgerCore
@testable import LedgerPostgres
import LedgerTestSupport
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
                for (index, orderId) in asked.enumerated() {
                    group.addTask { (index, try await store.streamVersion(.order(orderId))) }
                }
                let gathered = await eventually { store.versionGroup.statistics.waiting == asked.count - 1 }
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
}
