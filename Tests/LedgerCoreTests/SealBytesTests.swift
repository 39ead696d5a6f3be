import Foundation
import LedgerCore
import Testing

/// The bytes an event is sealed with, and the hex hashes are printed in, are written directly
/// (`EventSeal.canonicalBytes`, `RFC3339.format`, integers without `String`, `hex`, UUIDs), so they are held here to the definitions they must equal byte for byte: the canonical
/// JSON of the event's object, and times as RFC 3339 text that parses back to the same instant.
@Suite("Seal bytes: written directly, equal to their definitions")
struct SealBytesTests {
    @Test func timesAreWrittenAsRFC3339WithMicroseconds() {
        #expect(RFC3339.format(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00.000000Z")
        #expect(RFC3339.format(Date(timeIntervalSince1970: 1_795_007_109.123456)) == "2026-11-18T13:05:09.123456Z")
        #expect(RFC3339.format(Date(timeIntervalSince1970: -0.000001)) == "1969-12-31T23:59:59.999999Z")
        #expect(RFC3339.format(Date(timeIntervalSince1970: -62_167_219_200)) == "0000-01-01T00:00:00.000000Z")
        #expect(RFC3339.format(Date(timeIntervalSince1970: 253_402_300_799.5)) == "9999-12-31T23:59:59.500000Z")
        // Outside four-digit years (never from RFC 3339 text), as before.
        #expect(RFC3339.format(Date(timeIntervalSince1970: 253_402_300_800)) == "10000-01-01T00:00:00.000000Z")
        // `write` appends the same bytes, after whatever is already there.
        for seconds in [0, 1_795_007_109.123456, -0.000001, -62_167_219_200, 253_402_300_800] {
            let date = Date(timeIntervalSince1970: seconds)
            var bytes = Array("x".utf8)
            RFC3339.write(date, to: &bytes)
            #expect(bytes == Array(("x" + RFC3339.format(date)).utf8))
        }
    }

    /// Over the years the ledger records in (1970–2100): further out, a `Date` (a `Double` of seconds) no longer
    /// holds every microsecond, and a parsed time may print one microsecond off.
    @Test func everyFormattedTimeParsesBackToTheSameInstant() {
        var random = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let micros = Int64.random(in: 0...4_102_444_799_999_999, using: &random)
            let date = Date(timeIntervalSince1970: Double(micros) / 1_000_000)
            let text = RFC3339.format(date)
            #expect(text.utf8.count == 27, "\(text)")
            #expect(RFC3339.parse(text).map(RFC3339.format) == text, "\(text)")
        }
    }

    @Test func integersAreWrittenAsTheirDecimalText() {
        for value: Int64 in [0, 7, -1, -7, 10, -10, 4_999, Int64.max, Int64.min, Int64.max - 1, Int64.min + 1] {
            #expect(JSONValue.int(value).canonicalJSON == String(value))
        }
    }

    @Test func bytesAreWrittenAsLowerCaseHexTwoDigitsEach() {
        #expect([UInt8]().hex == "")
        #expect([0x00, 0x07, 0x0f, 0x10, 0xab, 0xff].hex == "00070f10abff")
        let bytes = (0...255).map(UInt8.init)
        #expect(bytes.hex == bytes.map { String(format: "%02x", $0) }.joined())
        #expect([UInt8](hex: bytes.hex) == bytes)
    }

    @Test func uuidsAreWrittenAsFoundationsTextInLowerCase() {
        #expect(UUID(uuid: (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 255)).lowercasedText
            == "00010203-0405-0607-0809-0a0b0c0d0eff")
        for _ in 0..<1_000 {
            let uuid = UUID()
            #expect(uuid.lowercasedText == uuid.uuidString.lowercased())
        }
    }

    @Test func anEventsSealBytesAreTheCanonicalJSONOfItsObject() throws {
        let samples: [(data: JSONValue, metadata: JSONValue, occurredAt: Date?)] = [
            (["amount": ["value": 499, "currency": "USD"], "productId": "gold.100", "quantity": 1], ["actor": "checkout"], nil),
            (["reason": .string("quote\" back\\ nl\n é 😀"), "z": .array([.null, .bool(true), .double(1.5), .int(-3)])],
             ["actor": "a", "requestId": "r-1", "ip": .null], Date(timeIntervalSince1970: 1_795_007_109.000001)),
            ([:], [:], Date(timeIntervalSince1970: -1)),
            (["é": 1, "e": 2, "E": ["b": [], "a": [:]]], ["ﬀ": "x"], Date(timeIntervalSince1970: 0)),
        ]
        // Orders name their stream `orderId`, as before kinds; any other kind names it `kind` and `streamId`.
        for (index, sample) in samples.enumerated() {
            let arguments = (
                stream: index.isMultiple(of: 2) ? StreamName.order("order-\(index)") : StreamName(StreamKind("later_kind"), "s-\(index)"),
                version: [1, 9, 10, Int(Int32.max)][index], eventId: UUID(),
                type: ["order.created", "receipt.received", "t\"", "order.granted"][index])
            let written = EventSeal.canonicalBytes(
                stream: arguments.stream, version: arguments.version, eventId: arguments.eventId, type: arguments.type,
                data: sample.data, metadata: sample.metadata, occurredAt: sample.occurredAt,
                recordedAt: Date(timeIntervalSince1970: 1_795_007_109.654321))
            let defined = EventSeal.canonicalValue(
                stream: arguments.stream, version: arguments.version, eventId: arguments.eventId, type: arguments.type,
                data: sample.data, metadata: sample.metadata, occurredAt: sample.occurredAt,
                recordedAt: Date(timeIntervalSince1970: 1_795_007_109.654321))
            #expect(String(decoding: written, as: UTF8.self) == defined.canonicalJSON)
            #expect(try JSONValue(parsing: written) == defined)
        }
    }
}

/// Stream kinds (schema/021) changed nothing an order's event was sealed with: its bytes are still those of the
/// object with `orderId`, byte for byte as written before kinds existed (this hash is from the fixture of
/// Tests/Fixtures/pre-kinds, event 1, written by the build before kinds).
@Suite("Seal bytes: an order's are those it had before stream kinds")
struct OrderSealBytesTests {
    @Test func anOrdersFirstEventHashesAsItDidBeforeKinds() throws {
        let occurredAt = try #require(RFC3339.parse("2026-11-20T09:00:00.000000Z") as Date?)
        let canonical = EventSeal.canonicalBytes(
            stream: .order("happy-0"), version: 1, eventId: try #require(UUID(uuidString: "d6a3f6d8-bfbf-4beb-8b6d-fd872dcaf48b")),
            type: "order.created",
            data: [
                "accountId": "acct-0", "amount": ["currency": "USD", "value": 499], "environment": "production",
                "productId": "gems.100", "provider": "app_store", "quantity": 1,
            ],
            metadata: ["actor": "dev", "requestId": "2a58538a-24d7-44a1-9b40-ab2bfb3d807c"],
            occurredAt: occurredAt,
            recordedAt: try #require(RFC3339.parse("2026-11-27T08:13:29.502876Z")))
        #expect(EventSeal.hash(previous: nil, canonical: canonical).hex
            == "2b29879ea37dac5f3cf2ac1ba51b3ea82cb2dfd35fc909d5e4e3f4dcb0d1ade1")
    }
}
