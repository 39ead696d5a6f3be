import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LedgerCore
import LedgerHTTP
@testable import LedgerPostgres
import LedgerProviderClients
import LedgerProviders
import LedgerRecovery
import LedgerTestSupport
import Logging
import NIOCore

/// Drives the real router against a fresh database, with one token per scope (and one with all). The router runs
/// as `serve` does, connected as the least-privileged `ledger_service`; tokens are set up by the owner.
struct API {
    let client: any TestClientProtocol
    /// The service's entry points (connected as `ledger_service`), as the router has them.
    let database: LedgerDatabase
    var ledger: Ledger { database.ledger }
    /// The owner's token store: creating and revoking tokens is not the service's to do.
    let tokens: TokenStore
    /// Secrets by token name: "writer" (events:write), "reader" (events:read), "finance" (finance:read), "all".
    let secrets: [String: String]
    /// The history lane in front of the router, when the API runs `overTCP`.
    var lane: HistoryLane? = nil

    struct Answer {
        let status: HTTPResponse.Status
        let headers: HTTPFields
        let bodyText: String
        var json: JSONValue { (try? JSONValue(parsing: Array(bodyText.utf8))) ?? .null }
        var errorCode: String? {
            if case .string(let code)? = json["error"]?["code"] { code } else { nil }
        }
    }

    /// The in-process servers log warnings and errors only: a line per request would bury a failing test's report.
    static let logger: Logger = {
        var logger = Logger(label: "Hummingbird")
        logger.logLevel = .warning
        return logger
    }()

    /// `questions`: the providers `POST /v1/orders/{id}/recover` asks (none: it answers 501), on `recoveryClock`.
    /// `readinessTimeout`: how long `/readyz` waits for the database. `overTCP`: the application as `serve` runs
    /// it — a server on a port, the history lane in front of the router — instead of the router driven directly.
    static func run(
        providers: ProviderVerifiers = ProviderVerifiers(), questions: ProviderQuestions? = nil,
        recoveryClock: @escaping @Sendable () -> Date = Date.init,
        subscriptionTransfers: SubscriptionTransferPolicy = .keep,
        readinessTimeout: Duration = LedgerApplication.defaultReadinessTimeout, overTCP: Bool = false,
        _ body: @Sendable @escaping (API) async throws -> Void
    ) async throws {
        try await TestDatabase.withOwnerAndService { owner, service in
            let database = LedgerDatabase(client: service)
            let tokens = TokenStore(client: owner)
            var secrets: [String: String] = [:]
            for (name, scopes) in [("writer", [Scope.eventsWrite]), ("reader", [.eventsRead]), ("finance", [.financeRead]), ("all", Scope.allCases), ("all-but-finance", [.eventsWrite, .eventsRead])] {
                secrets[name] = try await tokens.create(name: name, scopes: scopes)
            }
            let recoverer = questions.map {
                Recoverer(database: database, questions: $0, clock: recoveryClock, logger: API.logger)
            }
            let (router, lane) = LedgerApplication.routerAndLane(
                database: database, providers: providers, recoverer: recoverer,
                subscriptionTransfers: subscriptionTransfers, readinessTimeout: readinessTimeout)
            let frozen = secrets
            guard overTCP else {
                try await Application(router: router, logger: API.logger).test(.router) { client in
                    try await body(API(client: client, database: database, tokens: tokens, secrets: frozen))
                }
                return
            }
            let app = Application(
                router: router, server: LedgerApplication.server(lane: lane),
                configuration: .init(serverName: LedgerApplication.serverName), logger: API.logger)
            try await app.test(.live) { client in
                try await body(API(client: client, database: database, tokens: tokens, secrets: frozen, lane: lane))
            }
        }
    }

    func request(
        _ method: HTTPRequest.Method, _ uri: String, token: String? = "all", body: String? = nil,
        contentType: String? = "application/json", headers extra: HTTPFields = [:]
    ) async throws -> Answer {
        var headers = extra
        if let token { headers[.authorization] = "Bearer " + (secrets[token] ?? token) }
        if body != nil, let contentType { headers[.contentType] = contentType }
        return try await client.execute(uri: uri, method: method, headers: headers, body: body.map { ByteBuffer(string: $0) }) { response in
            Answer(status: response.status, headers: response.headers, bodyText: String(buffer: response.body))
        }
    }

    func post(_ orderId: String, _ body: JSONValue, token: String? = "all", headers: HTTPFields = [:]) async throws -> Answer {
        try await request(.post, "/v1/orders/\(orderId)/events", token: token, body: body.canonicalJSON, headers: headers)
    }

    func post(_ orderId: String, _ event: Submission, token: String? = "all") async throws -> Answer {
        try await post(orderId, event.json, token: token)
    }

    func get(_ uri: String, token: String? = "all") async throws -> Answer {
        try await request(.get, uri, token: token)
    }
}
