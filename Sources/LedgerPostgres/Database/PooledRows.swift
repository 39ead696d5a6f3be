import PostgresNIO
import Synchronization

/// A statement's rows: a read's streamed, holding the pool's session until they are read to the end, fail, or are
/// dropped; a write's read already (`SessionPool.query`).
struct PooledRows: AsyncSequence, Sendable {
    typealias Element = PostgresRow
    private enum Source: Sendable {
        case streaming(PostgresRowSequence, Lease)
        case collected([PostgresRow])
    }
    private let source: Source

    init(streaming rows: PostgresRowSequence, lease: Lease) { source = .streaming(rows, lease) }
    init(collected rows: [PostgresRow]) { source = .collected(rows) }

    func makeAsyncIterator() -> Iterator {
        switch source {
        case .streaming(let rows, let lease): Iterator(source: .streaming(rows.makeAsyncIterator(), lease))
        case .collected(let rows): Iterator(source: .collected(rows.makeIterator()))
        }
    }

    struct Iterator: AsyncIteratorProtocol {
        fileprivate enum Source {
            case streaming(PostgresRowSequence.AsyncIterator, Lease)
            case collected(IndexingIterator<[PostgresRow]>)
        }
        fileprivate var source: Source

        mutating func next() async throws -> PostgresRow? {
            switch source {
            case .collected(var rows):
                defer { source = .collected(rows) }
                return rows.next()
            case .streaming(var rows, let lease):
                defer { source = .streaming(rows, lease) }
                do {
                    guard let row = try await rows.next() else {
                        lease.end()
                        return nil
                    }
                    return row
                } catch {
                    lease.end()
                    throw error
                }
            }
        }
    }
}

/// A session leased for a statement's rows: given back once, when they end or when nothing holds them any more.
/// PostgresNIO runs a session's statements one after the other, so one whose rows were dropped unread is finished
/// before the next lease's statement starts.
final class Lease: Sendable {
    let pool: SessionPool
    let connection: PostgresConnection
    private let ended = Atomic(false)

    init(pool: SessionPool, connection: PostgresConnection) {
        self.pool = pool
        self.connection = connection
    }

    func end() {
        guard !ended.exchange(true, ordering: .acquiringAndReleasing) else { return }
        pool.release(connection)
    }

    deinit { end() }
}
