import Foundation
import NIOCore
import PostgresNIO

/// A `timestamptz` bind that rounds to the nearest microsecond.
///
/// PostgresNIO truncates a `Date` when encoding it, so a time read from the database and written back could
/// lose a microsecond and a projection would no longer equal the fold of its events. Every time the ledger
/// writes goes through this type.
struct Timestamp: PostgresEncodable, PostgresNonThrowingEncodable {
    let date: Date

    init(_ date: Date) { self.date = date }

    static var psqlType: PostgresDataType { .timestamptz }
    static var psqlFormat: PostgresFormat { .binary }

    /// PostgreSQL counts microseconds from 2000-01-01 UTC.
    static let epoch2000 = Date(timeIntervalSince1970: 946_684_800)

    func encode<JSONEncoder: PostgresJSONEncoder>(into buffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>) {
        buffer.writeInteger(Self.microseconds(date))
    }

    /// PostgreSQL's binary `timestamptz`: microseconds since 2000-01-01 UTC, rounded.
    static func microseconds(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince(epoch2000) * 1_000_000).rounded())
    }

    /// The moment as PostgreSQL keeps it (to the microsecond), as one `Date` however it was read: two reads of the
    /// same stored time compare equal.
    var stored: Date {
        Self.epoch2000.addingTimeInterval(Double(Self.microseconds(date)) / 1_000_000)
    }
}

extension Optional where Wrapped == Date {
    /// The optional time as a bind (`NULL` when absent).
    var timestamp: Timestamp? { map(Timestamp.init) }
}

extension Timestamp: PostgresArrayEncodable {
    static var psqlArrayType: PostgresDataType { .timestamptzArray }
}
