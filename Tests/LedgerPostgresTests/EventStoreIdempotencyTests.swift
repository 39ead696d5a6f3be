import Foundation
import LedgerCore
@testable import LedgerPostgres
import LedgerTestSupport
import PostgresNIO
import Testing

@Suite("Event store: idempotency and append-only")
struct EventStoreIdempotencyTests {
    @Test func retryingTheSameEventReturnsTheOriginalResultAndWritesOnce() async throws {
        try await TestDatabase.withClient { client in
            let store = EventStore(client: client)
            let order = StoreFixtures.orderId()
            let event = StoreFixtures.event("paid", 7)
            let original = try await store.append(to: order, events: [event])
            _ = try await store.append(to: order, events: [StoreFixtures.event()])
            // The stream moved on and the expected version is stale: the retry is still answered with the original.
            let retry = try await store.append(to: order, expectedVersion: .noStream, events: [event])
            #expect(retry.isReplay)
            #expect(retry.events == original.events)
            #expect(try await store.count("events") == 2)
        }
    }

    @Test func sixteenConcurrentRetriesOfOneEventWriteExactlyOneRow() async throws {
        try await TestDatabase.withClient { client in
            let store = EventStore(client: client)
            let order = StoreFixtures.orderId()
            let event = StoreFixtures.event("paid", 7)
            let results = try await withThrowingTaskGroup(of: AppendResult.self) { group in
                for _ in 0..<16 { group.addTask { try await store.append(to: order, events: [event]) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(Set(results.map(\.events)).count == 1)
            #expect(results.filter { !$0.isReplay }.count == 1)
            #expect(try await store.count("events") == 1)
        }
    }

    @Test func sixteenConcurrentPostsOfOneEventIdToDifferentOrdersStoreItOnce() async throws {
        try await TestDatabase.withClient { client in
            let store = EventStore(client: client)
            let event = StoreFixtures.event("paid", 7)
            let results = await withTaskGroup(of: Result<AppendResult, any Error>.self) { group in
                for n in 0..<16 { group.addTask { await attempt { try await store.append(to: "order-\(n)", events: [event]) } } }
                return await group.reduce(into: []) { $0.append($1) }
            }
            let stored = results.compactMap { try? $0.get() }
            let conflicts = results.filter {
                if case .failure(let error) = $0, case EventStoreError.idempotencyConflict(event.eventId, _)? = error as? EventStoreError { true } else { false }
            }
            let storedRows = try await store.count("events")
            #expect(stored.count == 1)
            #expect(conflicts.count == 15)
            #expect(storedRows == 1)
        }
    }

    @Test func sameEventIdWithDifferentDataIsAnIdempotencyConflict() async throws {
        try await TestDatabase.withClient { client in
            let store = EventStore(client: client)
            let order = StoreFixtures.orderId()
            let id = UUID()
            _ = try await store.append(to: order, events: [StoreFixtures.event("paid", 1, id: id)])
            await #expect(throws: EventStoreError.idempotencyConflict(eventId: id, stored: .order(order))) {
                try await store.append(to: order, events: [StoreFixtures.event("paid", 2, id: id)])
            }
            await #expect(throws: EventStoreError.idempotencyConflict(eventId: id, stored: .order(order))) {
                try await store.append(to: order, events: [StoreFixtures.event("refunded", 1, id: id)])
            }
            await #expect(throws: EventStoreError.idempotencyConflict(eventId: id, stored: .order(order))) {
                try await store.append(to: "another-order", events: [StoreFixtures.event("paid", 1, id: id)])
            }
        }
    }

    @Test func aBatchWithOneFailingEventWritesNothing() async throws {
        try await TestDatabase.withClient { client in
            let store = EventStore(client: client)
            let order = StoreFixtures.orderId()
            let taken = StoreFixtures.event("paid", 1)
            _ = try await store.append(to: "other", events: [taken])
            await #expect(throws: EventStoreError.self) {
                try await store.append(
                    to: order, events: [StoreFixtures.event(), StoreFixtures.event("paid", 9, id: taken.eventId), StoreFixtures.event()])
            }
            #expect(try await store.read(.order(order)).isEmpty)
            #expect(try await store.count("events") == 1)
            #expect(try await store.count("streams") == 1)
        }
    }

    @Test(arguments: [
        "UPDATE events SET type = 'edited'",
        "DELETE FROM events",
        "TRUNCATE events",
    ])
    func theDatabaseRefusesToChangeStoredEvents(statement: String) async throws {
        try await TestDatabase.withClient { client in
            let store = EventStore(client: client)
            _ = try await store.append(to: StoreFixtures.orderId(), events: [StoreFixtures.event()])
            do {
                try await client.query(PostgresQuery(unsafeSQL: statement))
                Issue.record("\(statement) was not refused")
            } catch let error as PSQLError {
                #expect(error.serverInfo?[.sqlState] == "42501")
                #expect(error.serverInfo?[.message]?.contains("append-only") == true)
            }
            #expect(try await store.count("events") == 1)
        }
    }
}
