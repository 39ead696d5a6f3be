import Logging
import PostgresNIO

/// A hot statement whose text is the same on every call (only its bind values change). Its `sql` is the text its
/// builder produces; it runs as a named prepared statement, which PostgreSQL parses, analyses and plans once per
/// connection instead of on every call: profiled, that was more than half of PostgreSQL's time per append
/// (BENCHMARKS.md).
///
/// A bind that may be NULL carries a cast in the SQL (`::int8`, `::timestamptz`, …): PostgreSQL infers a
/// parameter's type when the statement is prepared, and a NULL on that first call has no type of its own.
protocol StatementShape {
    /// What each connection knows the prepared statement by: unique among the shapes (`HotStatementPlanTests`). A
    /// constant, since PostgresNIO asks for it on every call: made from the type's name each time, it was 1 % of an
    /// append's CPU.
    static var name: String { get }
    static var sql: String { get }
}

struct PreparedQuery<Shape: StatementShape>: PostgresPreparedStatement {
    typealias Row = PostgresRow
    static var name: String { Shape.name }
    static var sql: String { Shape.sql }
    let bindings: PostgresBindings

    func makeBindings() -> PostgresBindings { bindings }
    func decodeRow(_ row: PostgresRow) -> PostgresRow { row }
}

/// A builder produced a text its shape does not know: a bug, refused rather than run under the wrong name.
struct StatementShapeMismatch: Error, CustomStringConvertible {
    let shape: String
    var description: String { "the statement built for \(shape) is not the one prepared under that name" }
}

extension PostgresConnection {
    /// Runs `query` as the prepared statement of `shape`, whose text it must be, on an open session
    /// (`OpenSessionStatements.swift`).
    func statement<Shape: StatementShape>(
        _ query: PostgresQuery, preparedAs shape: Shape.Type, logger: Logger
    ) async throws -> AsyncThrowingMapSequence<PostgresRowSequence, PostgresRow> {
        guard query.sql == Shape.sql else { throw StatementShapeMismatch(shape: String(describing: shape)) }
        return try await whenOpen { try await $0.execute(PreparedQuery<Shape>(bindings: query.binds), logger: logger) }
    }
}
