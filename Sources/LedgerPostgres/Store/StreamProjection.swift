import Foundation
import LedgerCore
import PostgresNIO

/// A kind of stream as the append sees it: what its read takes beside the stream's head, and what its write stores
/// beside the events, inside the append's own two statements (`AppendStatements`, Append/) — so a kind's projection
/// is written in the same commit as its events, and read in the same snapshot as the stream's head. The append is
/// written once over a projection; orders are `OrderProjection` (Orders/).
///
/// The SQL a projection gives is pieces of the append's statements, in the order they are named below: the read's
/// columns after the store's own, then its joins on `wanted.stream_id` (the stream's id); the write's common table
/// expressions after `appended` (its events as written) and `won` (nothing of the projection may be written unless
/// the stream's head moved: `WHERE EXISTS (SELECT 1 FROM won)`), and one boolean column of the final `SELECT` that
/// checks what those wrote (`ledger_append_requires`, schema/008; `true` for none). The grouped write is the same,
/// over several streams: its `w` holds one row per stream, numbered `n`, and its final `SELECT` may join the
/// projection's own rows by `n` (`groupWriteJoins`) for its check.
protocol StreamProjection: Sendable {
    /// What a decision on the stream starts from beside its version (an order: its row, and the bindings of the
    /// transactions the new events name).
    associatedtype Read: Sendable
    /// What a decision leaves, written with the events (an order: its new row).
    associatedtype Written: Sendable

    static var kind: StreamKind { get }

    /// The read's columns, after the store's own (none: empty): `decodeRead` reads them back.
    static var readColumns: String { get }
    /// The read's joins on `wanted.stream_id`; `claims` are the keys the new events name (an order's transactions).
    static func readJoins(claims: [String], into sql: inout PostgresQuery.StringInterpolation)
    /// The read's columns, from `index` on, for the stream `id`.
    static func decodeRead(_ columns: PostgresRandomAccessRow, from index: Int, stream id: String) throws -> Read
    /// What a decision starts from on a stream that has no event yet, without a read.
    static var noStream: Read { get }
    /// What the next decision starts from after `written`, without a read (`RecentStreams`).
    static func read(after written: Written, stream id: String) -> Read
    /// Whether a batch whose first event has this type may start the stream (then its append may skip the read when
    /// no stream is remembered: either the stream is new, or the write's guards find it is not).
    static func startsStream(firstEventType: String) -> Bool

    /// The write's expressions for `written` on the stream `id` (nil: nothing projected).
    static func write(_ written: Written?, stream id: String, into sql: inout PostgresQuery.StringInterpolation)
    static func writeCheck(_ written: Written?, into sql: inout PostgresQuery.StringInterpolation)
    /// The grouped write's, for `written[n - 1]` on `w`'s stream `n`; its check may use `a` (`appended`), `w`, and
    /// what `groupWriteJoins` joins (empty: nothing).
    static func groupWrite(_ written: [Written], into sql: inout PostgresQuery.StringInterpolation)
    static var groupWriteJoins: String { get }
    static var groupWriteCheck: String { get }
}
