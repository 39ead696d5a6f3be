import Crypto
import LedgerCore
import Foundation
import Logging
import PostgresNIO

/// What a token may do.
public enum Scope: String, Sendable, Hashable, CaseIterable, Comparable {
    /// Post events.
    case eventsWrite = "events:write"
    /// Read orders, history, transactions and the feed.
    case eventsRead = "events:read"
    /// Reports, reconciliation and anomalies.
    case financeRead = "finance:read"

    public static func < (lhs: Scope, rhs: Scope) -> Bool {
        (allCases.firstIndex(of: lhs) ?? 0) < (allCases.firstIndex(of: rhs) ?? 0)  // every case is in allCases
    }
}

/// A token as listed: never its secret.
public struct TokenInfo: Sendable, Hashable {
    public var name: String
    public var scopes: [Scope]
    public var createdAt: Date
    public var revokedAt: Date?
}

/// Who a request's bearer token says it is.
public struct AuthenticatedToken: Sendable, Hashable {
    public var name: String
    public var scopes: Set<Scope>
}

public enum TokenError: Error, Sendable, Hashable, CustomStringConvertible {
    case nameTaken(String)
    case invalidName(String)
    case unknownScope(String)
    case noScopes
    case notFound(String)

    public var description: String {
        switch self {
        case .nameTaken(let name): "a token named \(name) already exists"
        case .invalidName(let name): "token name \(name) must be 1–64 characters of A–Z, a–z, 0–9, '.', '_', ':' or '-'"
        case .unknownScope(let scope): "unknown scope \(scope) (known: \(Scope.allCases.map(\.rawValue).joined(separator: ", ")))"
        case .noScopes: "a token needs at least one scope"
        case .notFound(let name): "no active token named \(name)"
        }
    }
}

/// Bearer tokens. Secrets are 256 random bits, shown once and stored only as their SHA-256: with that much entropy
/// a slow password hash adds nothing, and lookup by hash compares no secret bytes in Swift, so there is no timing
/// signal about the secret. `serve` keeps valid tokens in a `TokenCache`, which still refuses a revoked token on its
/// next request.
struct TokenStore: Sendable {
    let client: PostgresClient
    let logger: Logger

    init(client: PostgresClient, logger: Logger = Logger(label: "ledger.tokens")) {
        self.client = client
        self.logger = logger
    }

    /// Creates a token and returns its secret (the only time it exists outside the caller).
    func create(name: String, scopes: [Scope]) async throws -> String {
        guard name.utf8.count <= 64, Identifier.isValid(name) else { throw TokenError.invalidName(name) }
        guard !scopes.isEmpty else { throw TokenError.noScopes }
        let secret = Self.newSecret()
        do {
            try await client.query(
                """
                INSERT INTO api_tokens (name, secret_hash, scopes)
                VALUES (\(name), \(Self.hash(secret)), \(Set(scopes).sorted().map(\.rawValue)))
                """, logger: logger)
        } catch where sqlState(of: error) == SQLStates.uniqueViolation {
            throw TokenError.nameTaken(name)
        }
        return secret
    }

    func list() async throws -> [TokenInfo] {
        let rows = try await client.query(
            "SELECT name, scopes, created_at, revoked_at FROM api_tokens ORDER BY name", logger: logger)
        var tokens: [TokenInfo] = []
        for try await (name, scopes, createdAt, revokedAt) in rows.decode((String, [String], Date, Date?).self) {
            tokens.append(TokenInfo(name: name, scopes: scopes.compactMap(Scope.init), createdAt: createdAt, revokedAt: revokedAt))
        }
        return tokens
    }

    /// Revokes the token; its next request is refused.
    func revoke(name: String) async throws {
        let rows = try await client.query(
            "UPDATE api_tokens SET revoked_at = now() WHERE name = \(name) AND revoked_at IS NULL RETURNING 1", logger: logger)
        var revoked = false
        for try await _ in rows { revoked = true }
        guard revoked else { throw TokenError.notFound(name) }
    }

    /// The active token with this secret, or nil.
    func authenticate(secret: String) async throws -> AuthenticatedToken? {
        try await authenticateWithEpoch(secret: secret).token
    }

    /// The token (nil: no valid token has this secret) and the token epoch it was read under (schema/009), in one
    /// snapshot: a cache keeps the pair, and a later epoch means "look again".
    func authenticateWithEpoch(secret: String) async throws -> (token: AuthenticatedToken?, epoch: Int64) {
        try await client.query(
            """
            SELECT t.name, t.scopes, e.epoch FROM api_token_epoch e
            LEFT JOIN api_tokens t ON t.secret_hash = \(Self.hash(secret)) AND t.revoked_at IS NULL
            """,
            logger: logger
        ) { rows in
            for try await (name, scopes, epoch) in rows.decode((String?, [String]?, Int64).self) {
                guard let name, let scopes else { return (nil, epoch) }
                return (AuthenticatedToken(name: name, scopes: Set(scopes.compactMap(Scope.init))), epoch)
            }
            throw CorruptRow(column: "api_token_epoch.epoch", value: "no row")
        }
    }

    func isEmpty() async throws -> Bool {
        for try await exists in try await client.query("SELECT EXISTS (SELECT 1 FROM api_tokens)", logger: logger).decode(Bool.self) {
            return !exists
        }
        return true
    }

    /// `olt_` and 43 URL-safe base64 characters (32 random bytes).
    static func newSecret() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        let base64 = Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        return "olt_" + base64
    }

    static func hash(_ secret: String) -> ByteBuffer {
        ByteBuffer(bytes: SHA256.hash(data: Data(secret.utf8)))
    }
}
