import Foundation

/// RFC 3339 times as the ledger reads and prints them: UTC, microsecond precision (PostgreSQL's), so a time
/// printed by the ledger and passed back (e.g. as `asOf`) names exactly the same instant.
public enum RFC3339 {
    /// `2026-11-22T13:05:09.123456Z`. Written digit by digit into one string: every event's times are formatted
    /// for its seal, and again for each answer that shows it.
    public static func format(_ date: Date) -> String {
        let parts = Parts(date)
        guard parts.isNarrow else { return parts.wide }
        return String(unsafeUninitializedCapacity: Parts.width) { text in
            parts.write(to: text)
            return Parts.width
        }
    }

    /// Appends `format(date)`'s bytes to `bytes`, without making the string (the seal's bytes, the rebuild's rows).
    public static func write(_ date: Date, to bytes: inout [UInt8]) {
        let parts = Parts(date)
        guard parts.isNarrow else { return bytes.append(contentsOf: parts.wide.utf8) }
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: Parts.width) { text in
            parts.write(to: text)
            bytes.append(contentsOf: text)
        }
    }

    /// A time's fields, to the microsecond.
    private struct Parts {
        static let width = 27
        let year: Int64, month: Int64, day: Int64, secondOfDay: Int64, fraction: Int64

        init(_ date: Date) {
            let micros = Int64((date.timeIntervalSince1970 * 1_000_000).rounded())
            let (seconds, fraction) = RFC3339.floorDivide(micros, 1_000_000)
            let (days, secondOfDay) = RFC3339.floorDivide(seconds, 86_400)
            (year, month, day) = RFC3339.civil(fromDays: days)
            self.secondOfDay = secondOfDay
            self.fraction = fraction
        }

        /// A four-digit year: `width` bytes.
        var isNarrow: Bool { (0...9999).contains(year) }

        func write(to text: UnsafeMutableBufferPointer<UInt8>) {
            func put(_ value: Int64, width: Int, at start: Int) {
                var rest = value
                for index in (start..<start + width).reversed() {
                    text[index] = UInt8(ascii: "0") + UInt8(rest % 10)
                    rest /= 10
                }
            }
            put(year, width: 4, at: 0)
            text[4] = UInt8(ascii: "-")
            put(month, width: 2, at: 5)
            text[7] = UInt8(ascii: "-")
            put(day, width: 2, at: 8)
            text[10] = UInt8(ascii: "T")
            put(secondOfDay / 3600, width: 2, at: 11)
            text[13] = UInt8(ascii: ":")
            put(secondOfDay % 3600 / 60, width: 2, at: 14)
            text[16] = UInt8(ascii: ":")
            put(secondOfDay % 60, width: 2, at: 17)
            text[19] = UInt8(ascii: ".")
            put(fraction, width: 6, at: 20)
            text[26] = UInt8(ascii: "Z")
        }

        /// A year outside 0000–9999 (only a date that never came from RFC 3339 text has one), as `format` always
        /// wrote it.
        var wide: String {
            let digits = { (value: Int64, width: Int) -> String in
                let text = String(value)
                return String(repeating: "0", count: max(0, width - text.count)) + text
            }
            return "\(digits(year, 4))-\(digits(month, 2))-\(digits(day, 2))T"
                + "\(digits(secondOfDay / 3600, 2)):\(digits(secondOfDay % 3600 / 60, 2)):\(digits(secondOfDay % 60, 2))"
                + ".\(digits(fraction, 6))Z"
        }
    }

    /// Parses `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`; nil when the text is not such a time.
    /// Fractions beyond microseconds are rounded to the nearest microsecond.
    public static func parse(_ text: String) -> Date? {
        let chars = Array(text.utf8)
        var index = 0
        func number(_ width: Int) -> Int64? {
            guard index + width <= chars.count else { return nil }
            var value: Int64 = 0
            for char in chars[index..<index + width] {
                guard (48...57).contains(char) else { return nil }
                value = value * 10 + Int64(char - 48)
            }
            index += width
            return value
        }
        func expect(_ allowed: String) -> Bool {
            guard index < chars.count, allowed.utf8.contains(chars[index]) else { return false }
            index += 1
            return true
        }
        guard let year = number(4), expect("-"), let month = number(2), expect("-"), let day = number(2),
              expect("Tt"), let hour = number(2), expect(":"), let minute = number(2), expect(":"), let second = number(2),
              (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day),
              hour < 24, minute < 60, second < 60
        else { return nil }
        var micros: Int64 = 0
        if index < chars.count, chars[index] == UInt8(ascii: ".") {
            index += 1
            var scale: Double = 100_000
            var fraction: Double = 0
            let start = index
            while index < chars.count, (48...57).contains(chars[index]) {
                fraction += Double(chars[index] - 48) * scale
                scale /= 10
                index += 1
            }
            guard index > start else { return nil }
            micros = Int64(fraction.rounded())
        }
        var offsetSeconds: Int64 = 0
        if expect("Zz") {
        } else if index < chars.count, chars[index] == UInt8(ascii: "+") || chars[index] == UInt8(ascii: "-") {
            let sign: Int64 = chars[index] == UInt8(ascii: "-") ? -1 : 1
            index += 1
            guard let offsetHours = number(2), expect(":"), let offsetMinutes = number(2), offsetHours < 24, offsetMinutes < 60
            else { return nil }
            offsetSeconds = sign * (offsetHours * 3600 + offsetMinutes * 60)
        } else {
            return nil
        }
        guard index == chars.count else { return nil }
        let seconds = days(fromCivil: year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds
        // In UTC the instant must still have a four-digit year from 0001: `0001-01-01T00:00:00+01:00` is in year 0 and
        // `9999-12-31T23:59:00-01:00` in 10000, which `format` cannot write as RFC 3339, so a time stored as text
        // (event data) would never parse again.
        guard (Self.earliestSecond...Self.latestSecond).contains(seconds) else { return nil }
        return Date(timeIntervalSince1970: Double(seconds * 1_000_000 + micros) / 1_000_000)
    }

    /// Year 1, not year 0: PostgreSQL and Foundation disagree about the year before 1 (1 BC), and such a time in an
    /// event (`occurredAt`) or a reconciliation file was answered 500. No payment happened then.
    private static let earliestSecond = days(fromCivil: 1, 1, 1) * 86_400
    private static let latestSecond = days(fromCivil: 9999, 12, 31) * 86_400 + 86_399

    /// Parses a calendar date `YYYY-MM-DD` as its midnight in UTC.
    public static func parseDay(_ text: String) -> Date? {
        parse(text + "T00:00:00Z")
    }

    private static func floorDivide(_ value: Int64, _ divisor: Int64) -> (Int64, Int64) {
        let quotient = value >= 0 ? value / divisor : (value - divisor + 1) / divisor
        return (quotient, value - quotient * divisor)
    }

    private static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    // Days since 1970-01-01 ↔ proleptic Gregorian dates (H. Hinnant's algorithms).
    private static func days(fromCivil year: Int64, _ month: Int64, _ day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static func civil(fromDays days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
