import Crypto
import Foundation

/// What makes the ledger tamper-evident: every event's exact bytes, hashed into a chain per stream, and every
/// event's hash folded into one running digest over the whole ledger.
///
/// - The **canonical bytes** of an event are the canonical JSON (`JSONValue.canonicalJSON`: sorted keys, no
///   whitespace) of `{data, eventId, metadata, occurredAt, orderId, recordedAt, type, version}` for an order's event,
///   and of `{data, eventId, kind, metadata, occurredAt, recordedAt, streamId, type, version}` for any other kind's,
///   with the event id in lower case and times as `RFC3339.format` prints them (UTC, microseconds). An order's bytes
///   are those it had before streams had kinds (schema/021), so every hash and digest taken before still holds. The
///   store keeps these bytes next to the row, because jsonb does not keep the bytes it was given.
/// - The **event hash** is `SHA-256(previous event's hash in the same stream ‖ canonical bytes)`; the first event of
///   a stream has no previous hash (nothing is prepended).
/// - The **ledger digest** after n events (in feed order) is `SHA-256(digest after n-1 ‖ hash of event n)`, starting
///   from 32 zero bytes. A digest someone saved pins every event up to its position: changing any of them changes
///   its hash, so it changes the digest.
public enum EventSeal {
    /// The bytes of `canonicalValue(…).canonicalBytes`, written member by member in the order of their sorted names,
    /// without building and sorting an object first: each append seals its events, and the sealer and `ledger verify`
    /// seal every event again to check it.
    public static func canonicalBytes(
        stream: StreamName, version: Int, eventId: UUID, type: String, data: JSONValue, metadata: JSONValue,
        occurredAt: Date?, recordedAt: Date
    ) -> [UInt8] {
        let isOrder = stream.kind == .order
        var bytes: [UInt8] = []
        bytes.reserveCapacity(512)
        bytes.append(contentsOf: #"{"data":"#.utf8)
        data.write(to: &bytes)
        bytes.append(contentsOf: #","eventId":"#.utf8)
        JSONValue.writeString(eventId.lowercasedText, to: &bytes)
        if !isOrder {
            bytes.append(contentsOf: #","kind":"#.utf8)
            JSONValue.writeString(stream.kind.name, to: &bytes)
        }
        bytes.append(contentsOf: #","metadata":"#.utf8)
        metadata.write(to: &bytes)
        bytes.append(contentsOf: #","occurredAt":"#.utf8)
        if let occurredAt { writeTime(occurredAt, to: &bytes) } else { bytes.append(contentsOf: "null".utf8) }
        if isOrder {
            bytes.append(contentsOf: #","orderId":"#.utf8)
            JSONValue.writeString(stream.id, to: &bytes)
        }
        bytes.append(contentsOf: #","recordedAt":"#.utf8)
        writeTime(recordedAt, to: &bytes)
        if !isOrder {
            bytes.append(contentsOf: #","streamId":"#.utf8)
            JSONValue.writeString(stream.id, to: &bytes)
        }
        bytes.append(contentsOf: #","type":"#.utf8)
        JSONValue.writeString(type, to: &bytes)
        bytes.append(contentsOf: #","version":"#.utf8)
        JSONValue.writeInteger(Int64(version), to: &bytes)
        bytes.append(UInt8(ascii: "}"))
        return bytes
    }

    /// A time as a JSON string: RFC 3339 text has nothing to escape.
    private static func writeTime(_ time: Date, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        RFC3339.write(time, to: &bytes)
        bytes.append(UInt8(ascii: "\""))
    }

    /// The canonical bytes as a JSON value, to compare with what stored bytes parse to.
    public static func canonicalValue(
        stream: StreamName, version: Int, eventId: UUID, type: String, data: JSONValue, metadata: JSONValue,
        occurredAt: Date?, recordedAt: Date
    ) -> JSONValue {
        var members: [String: JSONValue] = [
            "version": .int(Int64(version)), "eventId": .string(eventId.lowercasedText),
            "type": .string(type), "data": data, "metadata": metadata,
            "occurredAt": occurredAt.map { .string(RFC3339.format($0)) } ?? .null,
            "recordedAt": .string(RFC3339.format(recordedAt)),
        ]
        if stream.kind == .order {
            members["orderId"] = .string(stream.id)
        } else {
            members["kind"] = .string(stream.kind.name)
            members["streamId"] = .string(stream.id)
        }
        return .object(members)
    }

    public static func hash(previous: [UInt8]?, canonical: [UInt8]) -> [UInt8] {
        var hasher = SHA256()
        if let previous { hasher.update(data: previous) }
        hasher.update(data: canonical)
        return Array(hasher.finalize())
    }

    /// The digest of an empty ledger.
    public static let genesisDigest = [UInt8](repeating: 0, count: 32)

    public static func digest(previous: [UInt8], eventHash: [UInt8]) -> [UInt8] {
        hash(previous: previous, canonical: eventHash)
    }
}

extension Array where Element == UInt8 {
    /// Lower-case hex, as hashes and digests are printed: two digits a byte, written into one string.
    public var hex: String {
        String(unsafeUninitializedCapacity: count * 2) { text in
            for (index, byte) in enumerated() {
                text[2 * index] = lowerCaseHexDigits[Int(byte >> 4)]
                text[2 * index + 1] = lowerCaseHexDigits[Int(byte & 0x0F)]
            }
            return count * 2
        }
    }

    /// Parses lower- or upper-case hex; nil when the text is not whole bytes of hex.
    public init?(hex: String) {
        let digits = Array(hex.utf8)
        guard digits.count.isMultiple(of: 2) else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let byte = UInt8(String(decoding: digits[index...index + 1], as: UTF8.self), radix: 16) else { return nil }
            bytes.append(byte)
        }
        self = bytes
    }
}
