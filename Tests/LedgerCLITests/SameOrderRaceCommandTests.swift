import Foundation
import LedgerCore
@testable import LedgerPostgres
import LedgerTestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The same-order race as a user meets it: 64 HTTP clients post to ONE order of a running `ledger serve` at once
/// (re-delivered receipts and retried batches, no expected version); afterwards `ledger verify` and `ledger seal`
/// pass, as an auditor runs them.
@Suite("CLI: 64 clients on one order, then verify and seal")
struct SameOrderRaceCommandTests {
    static let clients = 64

    @Test func sixtyFourClientsOnOneOrderLeaveALedgerThatVerifiesAndSeals() async throws {
        try await TestDatabase.withURL { url, client in
            let secret = try await TokenStore(client: client).create(name: "checkout", scopes: [.eventsWrite, .eventsRead])
            let serviceURL = url.replacingOccurrences(of: "postgres://postgres@", with: "postgres://ledger_service@")
            let server = try await RunningServer.start(databaseURL: serviceURL)
            defer { server.stop() }
            let lifecycle = Lifecycle()
            #expect(try await server.post("/v1/orders/race-1/events", token: secret, body: lifecycle.created.json.canonicalJSON) == 201)

            let configuration = URLSessionConfiguration.ephemeral
            configuration.httpMaximumConnectionsPerHost = Self.clients
            let session = URLSession(configuration: configuration)
            let statuses = try await withThrowingTaskGroup(of: [Int].self) { group in
                for n in 0..<Self.clients {
                    group.addTask {
                        let body: JSONValue = n.isMultiple(of: 2)
                            ? lifecycle.receipt.json
                            : ["events": [lifecycle.receipt.json, lifecycle.verificationFailed(retryable: true).json]]
                        // As a client does: a 503 (the database work passed serve's deadline on a busy machine) is
                        // retried with the same event ids, and then answers 201, or 200 if the first try committed.
                        var answers: [Int] = []
                        repeat {
                            answers.append(try await server.post(
                                "/v1/orders/race-1/events", token: secret, body: body.canonicalJSON, session: session))
                        } while answers.last == 503 && answers.count < 5
                        return answers
                    }
                }
                return try await group.reduce(into: [Int: Int]()) { tally, answers in
                    for status in answers { tally[status, default: 0] += 1 }
                }
            }
            print("64 clients on one order: answers by status \(statuses.sorted { $0.key < $1.key })")
            #expect(Set(statuses.keys).isSubset(of: [201, 200, 503]), "every append is accepted: no expected version, every order valid")
            #expect(statuses[201, default: 0] + statuses[200, default: 0] == Self.clients, "each client ends with its append stored")
            let events = 1 + Self.clients / 2 + Self.clients / 2 * 2
            #expect(try await EventStore(client: client).count("events") == events)

            let verify = try await LedgerBinary.run(["verify"], databaseURL: url)
            print("ledger verify: exit \(verify.status), \(verify.stdout.split(separator: "\n").last ?? "")")
            #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")
            #expect(verify.stdout.hasSuffix("PASSED\n"))
            let lastPosition = try await EventStore(client: client).lastPositionInFeedOrder()
            let seal = try await LedgerBinary.run(["seal"], databaseURL: url) { outcome in
                outcome.status != 0
                    || PinnedDigest(outcome.stdout.trimmingCharacters(in: .whitespacesAndNewlines))?.position == lastPosition
            }
            print("ledger seal: exit \(seal.status), \(seal.stdout)\(seal.stderr)")
            #expect(seal.status == 0, "\(seal.stdout)\(seal.stderr)")
            #expect(PinnedDigest(seal.stdout.trimmingCharacters(in: .whitespacesAndNewlines))?.position == lastPosition)
            // For a script: the checkpoint as the API writes it, or null when there was nothing to seal.
            let sealedJSON = try await LedgerBinary.run(["seal", "--json"], databaseURL: url)
            let sealed = try JSONValue(parsing: Array(sealedJSON.stdout.utf8))
            #expect(sealedJSON.status == 0 && (sealed == .null || sealed["pinned"] != nil), "\(sealedJSON.stdout)\(sealedJSON.stderr)")
        }
    }
}

extension RunningServer {
    /// POSTs through `session` (one with room for many connections, for races).
    func post(_ path: String, token: String, body: String, session: URLSession) async throws -> Int {
        guard let url = URL(string: "http://127.0.0.1:\(port)\(path)") else { return 0 }
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data(body.utf8)
        let (_, response) = try await session.data(for: request)
        return (response as? HTTPURLResponse)?.statusCode ?? 0
    }
}
