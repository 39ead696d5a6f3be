import HTTPTypes
import Hummingbird
import LedgerPostgres

/// Where a read that may lag is served: a usable streaming replica (`ReadReplicas`), else the primary. Only reads
/// whose answer may be a little behind come here — an order, its history, chain and refusals, lists of orders, the
/// feed. Writes, the transaction lookup a client credits by, the digest, finance and readiness read the primary.
///
/// `Ledger-Min-Position: P` (a position the client's own append answered) asks for an answer that includes that
/// event: a replica that holds it, else the primary after `ReadReplicas.readYourWritesWait`. A replica that fails
/// mid-read (an answer that would be a 5xx, a timeout included) is skipped until the monitor finds it well, and the
/// primary answers instead — so a replica's outage costs the reads caught in it up to one deadline more. Every answer
/// says who served it in `Ledger-Read-From` (`primary`, `replica-1`…).
struct ReadSource: Sendable {
    let primary: Ledger
    let replicas: ReadReplicas?

    /// Runs `read` on the chosen ledger; `seeing` is a position the answer must include beyond the request's own
    /// header (the feed's cursor: a replica must hold the event the cursor names).
    func serve(
        _ request: Request, seeing cursor: Int64? = nil, _ read: (Ledger) async throws -> Response
    ) async throws -> Response {
        guard let replicas else { return try await read(primary) }
        let minimum = [try Self.minimumPosition(request), cursor].compactMap { $0 }.max()
        if let replica = await replicas.replica(seeing: minimum) {
            do {
                // A replica that just went away must not hold the read: its pool waits up to a minute for a
                // connection. Within the request's deadline (5 s when none is set), then the primary's turn.
                var response = try await Deadline.$request.withValue(Deadline.request ?? Self.replicaDeadline) {
                    try await read(replica.ledger)
                }
                response.headers[.readFrom] = replica.name
                return response
            } catch where APIError(from: error).status.code >= 500 {
                replicas.failed(replica, error)
            }
        }
        var response = try await read(primary)
        response.headers[.readFrom] = "primary"
        return response
    }

    /// How long a read waits for a replica when the request has no deadline of its own (tests; `serve` sets one).
    static let replicaDeadline = Duration.seconds(5)

    static func minimumPosition(_ request: Request) throws -> Int64? {
        guard let text = request.headers[.minimumPosition] else { return nil }
        guard let position = Int64(text), position >= 1 else {
            throw APIError.invalidRequest(field: "Ledger-Min-Position", "Ledger-Min-Position must be a position (an integer from 1)")
        }
        return position
    }
}

extension HTTPField.Name {
    static let minimumPosition = Self("Ledger-Min-Position")!
    static let readFrom = Self("Ledger-Read-From")!
}
