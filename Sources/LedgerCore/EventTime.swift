import Foundation

/// Times inside event data (`purchasedAt`, `refundedAt`): read as RFC 3339 with any offset, kept to the
/// millisecond, written back in UTC as `yyyy-MM-dd'T'HH:mm:ss[.SSS]Z` — the fraction only when it is not zero,
/// so the stored text is a function of the instant alone and parsing it back gives the same `Date`.
enum EventTime {
    static func parse(_ text: String) -> Date? {
        RFC3339.parse(text).map(truncated)
    }

    static func format(_ date: Date) -> String {
        // RFC3339 prints `…:SS.ffffffZ`; keep its first three fraction digits, or none when they are zeros.
        let micro = RFC3339.format(truncated(date))
        let seconds = micro.prefix { $0 != "." }
        let millis = micro.drop { $0 != "." }.dropFirst().prefix(3)
        return millis == "000" ? seconds + "Z" : seconds + "." + millis + "Z"
    }

    /// The instant rounded down to its millisecond.
    static func truncated(_ date: Date) -> Date {
        let micros = (date.timeIntervalSince1970 * 1_000_000).rounded()
        let millis = (micros / 1000).rounded(.down)
        return Date(timeIntervalSince1970: millis / 1000)
    }
}
