import Foundation
import LedgerCore

/// Where a kind's projection drifts from the fold of its streams: what each kind's check for `ledger verify`
/// (`OrderProjectionCheck`, `SubscriptionProjectionCheck`) reports.
enum ProjectionDrift {
    /// Field-by-field differences between a stored row and its fold (via reflection, so new fields are covered).
    /// Rows that are equal, as nearly all are, are told so by `==` alone: walking every field of every order by
    /// reflection was 19 s of `ledger verify`'s 63 s over 1.95 million events.
    static func differences<Row: Equatable>(table: String, key: String, stored: Row?, folded: Row?) -> [VerificationReport.Drift] {
        if stored == folded { return [] }
        switch (stored, folded) {
        case (nil, nil):
            return []
        case (nil, _):
            return [.init(table: table, key: key, field: "(row)", stored: "missing", folded: "present")]
        case (_, nil):
            return [.init(table: table, key: key, field: "(row)", stored: "present", folded: "missing")]
        case (let stored?, let folded?):
            return zip(Mirror(reflecting: stored).children, Mirror(reflecting: folded).children).compactMap { mine, theirs in
                guard (mine.value as? AnyHashable) != (theirs.value as? AnyHashable) else { return nil }
                return .init(
                    table: table, key: key, field: mine.label ?? "?", stored: describe(mine.value), folded: describe(theirs.value))
            }
        }
    }

    /// A value as a report prints it; times to the microsecond, as they are stored.
    private static func describe(_ value: Any) -> String {
        if let date = value as? Date { return RFC3339.format(date) }
        return String(describing: value)
    }
}

/// Events the domain cannot read, noted while the fold goes on without them (the fold's callback is synchronous).
final class NotedDrift: @unchecked Sendable {
    private let lock = NSLock()
    private var noted: [VerificationReport.Drift] = []

    func add(unreadable stream: StreamName, version: Int, type: String, error: any Error) {
        lock.withLock {
            noted.append(.init(
                table: "events", key: stream.id, field: "version \(version)", stored: type,
                folded: "unreadable, left out of the fold: \(error)"))
        }
    }

    var drift: [VerificationReport.Drift] { lock.withLock { noted } }
}
