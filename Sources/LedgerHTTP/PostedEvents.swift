import Foundation
import LedgerCore
import LedgerPostgres

/// The body of `POST /v1/orders/{orderId}/events`: one event `{eventId, type, data, occurredAt?, expectedVersion?}`
/// or a batch `{expectedVersion?, events: [...]}` recorded all or nothing.
struct PostedEvents {
    var submissions: [Submission]
    var expectedVersion: ExpectedVersion

    /// A batch holds at most this many events.
    static let maximumBatch = 100
    static let eventFields: Set<String> = ["eventId", "type", "data", "occurredAt"]

    init(_ body: JSONValue) throws {
        let root = try JSONFields(body, path: "")
        if root.members["events"] != nil {
            try root.onlyAllowing(["events", "expectedVersion"])
            guard case .array(let items)? = root.value("events"), (1...Self.maximumBatch).contains(items.count) else {
                throw APIError.invalidRequest(field: "events", "events must be an array of 1 to \(Self.maximumBatch) events")
            }
            submissions = try items.enumerated().map { index, item in
                try Self.submission(JSONFields(item, path: "events[\(index)]"))
            }
        } else {
            try root.onlyAllowing(Self.eventFields.union(["expectedVersion"]))
            submissions = [try Self.submission(root)]
        }
        // 0 means "no stream yet"; absent means "any version".
        expectedVersion = try root.integer("expectedVersion", in: 0...Int64(Int32.max))
            .map { $0 == 0 ? .noStream : .exactly(Int($0)) } ?? .any
    }

    private static func submission(_ fields: JSONFields) throws -> Submission {
        if !fields.path.isEmpty { try fields.onlyAllowing(eventFields) }
        return Submission(
            eventId: try fields.required("eventId", fields.uuid),
            type: try fields.required("type", fields.string),
            data: fields.members["data"] ?? .object([:]),
            occurredAt: try fields.time("occurredAt"))
    }
}
