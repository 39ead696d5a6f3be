import Foundation
import LedgerCore
@testable import LedgerPostgres
import Testing

/// `AuditedEvent.sealProblem` compares the stored canonical bytes with the canonical bytes of what the row says, and
/// only when they differ parses the stored bytes: bytes that say the same in another formatting are intact, bytes
/// that say something else are not, whichever way the comparison went.
@Suite("Seal check: the bytes of what the row says, then what the stored bytes mean")
struct SealCheckTests {
    static let event = StoredEvent(
        position: 1, stream: .order("order-1"), version: 1, eventId: UUID(), type: "order.finished",
        data: .object(["by": .string("client")]), metadata: .object([:]), occurredAt: nil,
        recordedAt: Date(timeIntervalSince1970: 1_790_000_000))

    static var canonical: [UInt8] {
        EventSeal.canonicalBytes(
            stream: event.stream, version: event.version, eventId: event.eventId, type: event.type, data: event.data,
            metadata: event.metadata, occurredAt: event.occurredAt, recordedAt: event.recordedAt)
    }

    static func sealed(_ event: StoredEvent, canonical: [UInt8]) -> AuditedEvent {
        AuditedEvent(event: event, canonical: canonical, hash: EventSeal.hash(previous: nil, canonical: canonical), previousHash: nil)
    }

    @Test func theCanonicalBytesOfTheRowAreIntact() {
        #expect(Self.sealed(Self.event, canonical: Self.canonical).sealProblem == nil)
    }

    @Test func bytesThatSayTheSameInAnotherFormattingAreIntact() throws {
        // Spaced out as another writer might have: not the ledger's bytes, but the same JSON.
        let spaced = Array(String(decoding: Self.canonical, as: UTF8.self)
            .replacingOccurrences(of: ",\"", with: ", \"").replacingOccurrences(of: "\":", with: "\": ").utf8)
        #expect(spaced != Self.canonical)
        #expect(try JSONValue(parsing: spaced) == JSONValue(parsing: Self.canonical))
        #expect(Self.sealed(Self.event, canonical: spaced).sealProblem == nil)
    }

    @Test func aRowThatSaysSomethingElseThanItsBytesIsReported() {
        var edited = Self.event
        edited.data = .object(["by": .string("server")])
        let problem = Self.sealed(edited, canonical: Self.canonical).sealProblem
        #expect(problem?.hasPrefix("the stored row differs from the bytes that were hashed") == true)
    }

    /// The kind is sealed with the id: an order's event moved to another kind of stream (same id) no longer says
    /// what its bytes say.
    @Test func aRowMovedToAnotherKindOfStreamIsReported() {
        var moved = Self.event
        moved.stream = StreamName(StreamKind("subscription"), moved.stream.id)
        #expect(Self.sealed(moved, canonical: Self.canonical).sealProblem?.hasPrefix("the stored row differs") == true)
    }
}
