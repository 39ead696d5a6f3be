import Foundation
import LedgerTestSupport
import Testing

/// Ids in the path follow the ledger's id rule before anything is looked up: `..` reached an order named `..`, and the
/// 404 for an 80 KB id echoed all of it.
@Suite("HTTP: ids in the path")
struct PathIdAPITests {
    @Test func anIdTheLedgerCouldNeverHoldIsABadRequestThatDoesNotEchoIt() async throws {
        try await API.run { api in
            let long = String(repeating: "x", count: 80_000)
            for path in ["/v1/orders/\(long)", "/v1/orders/\(long)/history", "/v1/orders/../history", "/v1/orders/./chain",
                         "/v1/transactions/\(long)"] {
                let answer = try await api.get(path)
                #expect(answer.status == .badRequest, "\(path.prefix(40)): \(answer.status)")
                #expect(answer.bodyText.utf8.count < 1000, "\(path.prefix(40)): the answer echoes the id")
            }
            let posted = try await api.post("..", Lifecycle().created)
            #expect(posted.status == .badRequest, "\(posted.bodyText)")
        }
    }
}
