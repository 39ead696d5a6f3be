import Foundation

/// One end of a period, as every command and the API take it: a calendar date (`YYYY-MM-DD`: the whole day, in the
/// report's time zone) or an RFC 3339 time. Both ends of a period are included: `to` a date means to the end of
/// that day; `to` a time means up to that instant.
public enum PeriodBound: Sendable, Hashable {
    case day(String)
    case instant(Date)

    /// The words every `--help` and error uses for it.
    public static let grammar = "a date (YYYY-MM-DD, the whole day) or an RFC 3339 time (2026-11-25T08:00:00Z)"

    public init?(_ text: String) {
        if CalendarDate.isValid(text) {
            self = .day(text)
        } else if let time = RFC3339.parse(text) {
            self = .instant(time)
        } else {
            return nil
        }
    }

    public var day: String? { if case .day(let day) = self { day } else { nil } }
    public var instant: Date? { if case .instant(let time) = self { time } else { nil } }

    /// Whether a period from `from` to `to` holds nothing, when that can be told without a time zone (both ends of
    /// one kind); a period mixing a date and a time is checked by the database, in the report's zone.
    public static func isEmpty(from: PeriodBound, to: PeriodBound) -> Bool {
        switch (from, to) {
        case (.day(let first), .day(let last)): first > last
        case (.instant(let first), .instant(let last)): first > last
        default: false
        }
    }
}
