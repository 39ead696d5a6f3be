import Foundation
import LedgerCore

/// `ledger export`: events with their seals, in feed order, one line each, streamed (constant memory).
/// Each line carries the exact bytes that were hashed (`canonical`) and the previous hash, so an auditor can
/// recompute every hash from the export alone: `hash = SHA-256(previousHash ‖ canonical)`. Every kind of stream is
/// exported: each line names its stream by `kind` and `streamId`, and an order's line also by `orderId`, as lines did
/// before streams had kinds.
public struct EventExport: Sendable {
    public enum Format: String, Sendable, CaseIterable {
        case jsonl, csv
    }

    /// An inclusive bound: a position, or a recorded time.
    public enum Bound: Sendable, Hashable {
        case position(Int64)
        case time(Date)

        /// Digits are a position; a date (YYYY-MM-DD, UTC) is its first instant, or with `endOfDay` (`--to`: the
        /// whole day included) its last microsecond; anything else must be an RFC 3339 time.
        public init?(_ text: String, endOfDay: Bool = false) {
            if let position = Int64(text), position >= 0 {
                self = .position(position)
            } else if CalendarDate.isValid(text), let start = RFC3339.parse(text + "T00:00:00Z") {
                self = .time(endOfDay ? start.addingTimeInterval(86_400 - 0.000_001) : start)
            } else if let time = RFC3339.parse(text) {
                self = .time(time)
            } else {
                return nil
            }
        }

        func admitsFromHere(_ event: StoredEvent) -> Bool {
            switch self {
            case .position(let position): event.position >= position
            case .time(let time): event.recordedAt >= time
            }
        }

        func admitsUpToHere(_ event: StoredEvent) -> Bool {
            switch self {
            case .position(let position): event.position <= position
            case .time(let time): event.recordedAt <= time
            }
        }
    }

    public var format: Format
    public var from: Bound?
    public var to: Bound?
    public var orderId: String?

    public init(format: Format, from: Bound? = nil, to: Bound? = nil, orderId: String? = nil) {
        self.format = format
        self.from = from
        self.to = to
        self.orderId = orderId
    }

    /// Writes the header (CSV) and every selected event through `write`, one record per call (without its line
    /// break; a CSV field may hold line breaks of its own, quoted); returns the count.
    @discardableResult
    func run(_ log: AuditLog, write: (String) throws -> Void) async throws -> Int {
        if format == .csv { try write(Self.csvHeader) }
        var count = 0
        let body: (AuditedEvent) async throws -> Bool = { audited in
            let event = audited.event
            guard from?.admitsFromHere(event) ?? true, to?.admitsUpToHere(event) ?? true else { return true }
            try write(line(audited))
            count += 1
            return true
        }
        if let orderId {
            try await log.forEach(of: .order(orderId), body)
        } else {
            try await log.forEachInFeedOrder(.snapshot, body)
        }
        return count
    }

    static let csvHeader = CSVWriter.record([
        "position", "kind", "stream_id", "version", "event_id", "type", "occurred_at", "recorded_at", "actor", "data", "metadata",
        "previous_hash", "hash", "canonical",
    ])

    func line(_ audited: AuditedEvent) -> String {
        let event = audited.event
        let canonical = audited.canonical.map { String(decoding: $0, as: UTF8.self) }
        switch format {
        case .jsonl:
            var members: [String: JSONValue] = [
                "position": .int(event.position), "kind": .string(event.stream.kind.name),
                "streamId": .string(event.stream.id), "version": .int(Int64(event.version)),
                "eventId": .string(event.eventId.lowercasedText), "type": .string(event.type),
                "occurredAt": event.occurredAt.map { .string(RFC3339.format($0)) } ?? .null,
                "recordedAt": .string(RFC3339.format(event.recordedAt)), "data": event.data, "metadata": event.metadata,
                "previousHash": audited.previousHash.map { .string($0.hex) } ?? .null,
                "hash": audited.hash.map { .string($0.hex) } ?? .null,
                "canonical": canonical.map(JSONValue.string) ?? .null,
            ]
            if event.stream.kind == .order { members["orderId"] = .string(event.stream.id) }
            return JSONValue.object(members).canonicalJSON
        case .csv:
            let actor = if case .string(let actor)? = event.metadata["actor"] { actor } else { "" }
            return CSVWriter.record([
                String(event.position), event.stream.kind.name, event.stream.id, String(event.version), event.eventId.lowercasedText,
                event.type, event.occurredAt.map(RFC3339.format) ?? "", RFC3339.format(event.recordedAt), actor,
                event.data.canonicalJSON, event.metadata.canonicalJSON, audited.previousHash?.hex ?? "",
                audited.hash?.hex ?? "", canonical ?? "",
            ])
        }
    }
}
