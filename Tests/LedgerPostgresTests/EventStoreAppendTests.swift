import Foundation
import LedgerCore
@testable import LedgerPostgres
import LedgerTestSupport
import PostgresNIO
import Testing

@Suite("Event store: append and read")
struct EventStoreAppendTests {
    @Test func appendedEventsReadBackWithContiguousVersionsAndIncreasingPositions() async throws {
        try await TestDatabase.withClient { client in
            let store = EventStore(client: client)
            let order = StoreFixtures.orderId()
            let first = try await store.append(to: order, events: [StoreFixtures.event("a", 1)])
            let rest = try await store.append(to: order, events: [StoreFixtures.event("b", 2), StoreFixtures.event("c", 3)])
            #expect(first.events.map(\.version) == [1])
            #expect(rest.events.map(\.version) == [2, 3])
            #expect(!first.isReplay && !rest.isReplay)

            let events = try await store.read(.order(order))
            #expect(events.map(\.version) == [1, 2, 3])
            #expect(events.map(\.type) == ["a", "b", "c"])
            #expect(events.map(\.data) == [.object(["n": 1]), .object(["n": 2]), .object(["n": 3])])
            #expect(zip(events, events.dropFirst()).allSatisfy { $0.position < $1.position })
            #expect(events.map(\.position) == (first.events + rest.events).map(\.position))
            try #require(events.count == 3)
            #expect(events[0].metadata == .object(["actor": "test"]))
        }
    }

    @Test func readUpToAVersionOrATimeReturnsOnlyThatPrefix() async throws {
        try await TestDatabase.withClient { client in
            let store = EventStore(client: client)
            let order = StoreFixtures.orderId()
            for n in 1...3 { _ = try await store.append(to: order, events: [StoreFixtures.event("e", n)]) }
            let all = try await store.read(.order(order))
            try #require(all.count >= 2)
            #expect(try await store.read(.order(order), upTo: .version(2)).map(\.version) == [1, 2])
            #expect(try await store.read(.order(order), upTo: .recordedAt(all[1].recordedAt)).map(\.version) == [1, 2])
            #expect(try await store.read(.order(order), upTo: .recordedAt(all[0].recordedAt.addingTimeInterval(-1))).isEmpty)
        }
    }

    @Test func wrongExpectedVersionIsATypedConflictAndWritesNothing() async throws {
        try await TestDatabase.withClient { client in
            let store = EventStore(client: client)
            let order = StoreFixtures.orderId()
            _ = try await store.append(to: order, expectedVersion: .noStream, events: [StoreFixtures.event()])
            _ = try await store.append(to: order, expectedVersion: .exactly(1), events: [StoreFixtures.event()])

            await #expect(throws: EventStoreError.versionConflict(stream: .order(order), expected: .exactly(1), actual: 2)) {
                try await store.append(to: order, expectedVersion: .exactly(1), events: [StoreFixtures.event()])
            }
            await #expect(throws: EventStoreError.versionConflict(stream: .order(order), expected: .noStream, actual: 2)) {
                try await store.append(to: order, expectedVersion: .noStream, events: [StoreFixtures.event()])
            }
            await #expect(throws: EventStoreError.versionConflict(stream: .order("new-order"), expected: .exactly(3), actual: 0)) {
                try await store.append(to: "new-order", expectedVersion: .exactly(3), events: [StoreFixtures.event()])
            }
            #expect(try await store.read(.order(order)).count == 2)
            #expect(try await store.count("events") == 2)
        }
    }

    @Test func losersOfAVersionConflictBurnNoPositions() async throws {
        try await TestDatabase.withClient { client in
            let store = EventStore(client: client)
            let order = StoreFixtures.orderId()
            let first = try await store.append(to: order, events: [StoreFixtures.event()])
            for _ in 0..<5 {
                _ = try? await store.append(to: order, expectedVersion: .noStream, events: [StoreFixtures.event()])
            }
            let next = try await store.append(to: order, events: [StoreFixtures.event()])
            #expect(next.events[0].position == first.events[0].position + 1)
        }
    }

    @Test func thirtyTwoConcurrentAppendersGetExactlyOneWinnerPerVersion() async throws {
        try await TestDatabase.withClient { client in
            let store = EventStore(client: client)
            let order = StoreFixtures.orderId()
            _ = try await store.append(to: order, events: [StoreFixtures.event()])

            // Round one: all 32 read version 1 and race to append version 2.
            let firstRound = await withTaskGroup(of: Result<AppendResult, any Error>.self) { group in
                for n in 0..<32 {
                    group.addTask {
                        await attempt { try await store.append(to: order, expectedVersion: .exactly(1), events: [StoreFixtures.event("race", n)]) }
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            let winners = firstRound.filter { if case .success = $0 { true } else { false } }
            let conflicts = firstRound.filter {
                if case .failure(let error) = $0, case EventStoreError.versionConflict(_, .exactly(1), 2)? = error as? EventStoreError { true } else { false }
            }
            #expect(winners.count == 1)
            #expect(conflicts.count == 31)

            // Then each of them retries with the version it reads until it lands.
            let conflictsSeen = try await withThrowingTaskGroup(of: Int.self) { group in
                for n in 0..<32 {
                    group.addTask {
                        var conflicts = 0
                        while true {
                            let current = try await store.read(.order(order)).last?.version ?? 0
                            do {
                                _ = try await store.append(to: order, expectedVersion: .exactly(current), events: [StoreFixtures.event("retry", n)])
                                return conflicts
                            } catch EventStoreError.versionConflict {
                                conflicts += 1
                            }
                        }
                    }
                }
                return try await group.reduce(0, +)
            }
            let events = try await store.read(.order(order))
            #expect(events.map(\.version) == Array(1...34))
            #expect(Set(events.map(\.eventId)).count == 34)
            #expect(conflictsSeen > 0)
        }
    }
}
