import Foundation
import LedgerCore
import PostgresNIO

extension PostgresQuery.StringInterpolation {
    /// `SELECT starts, ends`: the period `from`…`to` (both included) as a half-open range of instants. A date is its
    /// whole day in `timeZone`; a time is that instant (`to`'s included: the range ends a microsecond after it,
    /// PostgreSQL's precision).
    mutating func appendInterpolation(period from: PeriodBound, _ to: PeriodBound, timeZone: String) {
        appendInterpolation(unescaped: "SELECT COALESCE(")
        appendInterpolation(from.instant.map(Timestamp.init))
        appendInterpolation(unescaped: "::timestamptz, (")
        appendInterpolation(from.day)
        appendInterpolation(unescaped: "::date)::timestamp AT TIME ZONE ")
        appendInterpolation(timeZone)
        appendInterpolation(unescaped: ") AS starts, COALESCE(")
        appendInterpolation(to.instant.map(Timestamp.init))
        appendInterpolation(unescaped: "::timestamptz + interval '1 microsecond', (")
        appendInterpolation(to.day)
        appendInterpolation(unescaped: "::date + 1)::timestamp AT TIME ZONE ")
        appendInterpolation(timeZone)
        appendInterpolation(unescaped: ") AS ends")
    }
}
