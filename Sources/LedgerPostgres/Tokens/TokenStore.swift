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
    /// Rotate tokens' secrets (`POST /v1/tokens/{name}/rotate`), for operators.
    case tokensAdmin = "tokens:admin"
    /// Ask an order's provider now (`POST /v1/orders/{id}/recover`), for support.
    case ordersRecover = "orders:recover"
    /// Add, change, remove and replay webhook endpoints, and read their deliveries (`/v1/webhooks`), for operators.
    case webhooksManage = "webhooks:manage"

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

/// A rotated token: its new secret (shown once), and when the secret it replaced stops being accepted.
public struct RotatedToken: Sendable, Hashable {
    public var name: String
    public var secret: String
    public var previousValidUntil: Date
}

public enum TokenError: Error, Sendable, Hashable, CustomStringConvertible {
    case nameTaken(String)
    case invalidName(String)
    case unknownScope(String)
    case noScopes
    case notFound(String)
    case invalidOverlap(Int)
    /// The token asking to rotate is not valid (revoked, or no such secret): 401.
    case callerNotValid
    /// The token asking to rotate may not rotate this one (a replaced secret, no `tokens:admin`, or the target's
    /// scopes are not within its own; `reason` says which): 403.
    case callerMayNotRotate(reason: String)

    /// The longest a rotated token's previous secret may stay valid: a week.
    public static let maximumOverlapSeconds = 7 * 86_400

    public var description: String {
        switch self {
        case .nameTaken(let name): "a token named \(name) already exists"
        case .invalidName(let name): "token name \(name) must be 1–64 characters of A–Z, a–z, 0–9, '.', '_', ':' or '-'"
        case .unknownScope(let scope): "unknown scope \(scope) (known: \(Scope.allCases.map(\.rawValue).joined(separator: ", ")))"
        case .noScopes: "a token needs at least one scope"
        case .notFound(let name): "no active token named \(name)"
        case .invalidOverlap(let seconds):
            "the overlap must be 0 to \(Self.maximumOverlapSeconds) seconds (a week), not \(seconds)"
        case .callerNotValid: "the bearer token is not valid or has been revoked"
        case .callerMayNotRotate(let reason): reason
        }
    }
}

/// Bearer tokens. Secrets are 256 random bits, shown once and stored only as their SHA-256: with that much entropy
/// a slow password hash adds nothing, and lookup by hash compares no secret bytes in Swift, so there is no timing
/// signal about the secret. `serve` keeps valid tokens in a `TokenCache`, which still refuses a revoked token on its
/// next request.
struct TokenStore: Sendable {
    let client: SessionPool
    let logger: Logger

    init(client: SessionPool, logger: Logger = Logger(label: "ledger.tokens")) {
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
            "SELECT name, scopes, created_at, revoked_at FROM api_tokens ORDER BY name", .reads, logger: logger)
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

    /// A new secret for the active token `name`, same name and scopes; the secret it replaces stays valid for
    /// `overlap` (0: refused at once), then is refused. The operator's (`ledger tokens rotate`, as the database's
    /// owner); the API rotates only as a token that may (`rotate(name:overlap:asCaller:)`).
    func rotate(name: String, overlap: Duration) async throws -> RotatedToken {
        let (seconds, secret) = try Self.rotation(overlap)
        let validUntil = try await client.query(
            "SELECT ledger_rotate_token(\(name), \(Self.hash(secret)), make_interval(secs => \(seconds)))", logger: logger
        ) { rows in
            for try await validUntil in rows.decode(Date?.self) { return validUntil }
            return nil
        }
        guard let validUntil else { throw TokenError.notFound(name) }
        return RotatedToken(name: name, secret: secret, previousValidUntil: validUntil)
    }

    /// `rotate`, asked over the API by the bearer of `callerSecret`: allowed only to a token's current secret with
    /// `tokens:admin`, and only for a token whose scopes are within the caller's — decided in the transaction that
    /// rotates (`ledger_rotate_token_as`, schema/015), so a token revoked meanwhile rotates nothing.
    func rotate(name: String, overlap: Duration, asCaller callerSecret: String) async throws -> RotatedToken {
        let (seconds, secret) = try Self.rotation(overlap)
        let (outcome, validUntil) = try await client.query(
            """
            SELECT rotation_outcome, replaced_secret_ends FROM ledger_rotate_token_as(
                \(Self.hash(callerSecret)), \(name), \(Self.hash(secret)), make_interval(secs => \(seconds)))
            """, logger: logger
        ) { rows in
            for try await row in rows.decode((String, Date?).self) { return row }
            throw CorruptRow(column: "ledger_rotate_token_as", value: "no row")
        }
        if ["rotated", "not_found", "forbidden"].contains(outcome) { TokenConfirmation.authenticatedByStatement() }
        switch (outcome, validUntil) {
        case ("rotated", let validUntil?): return RotatedToken(name: name, secret: secret, previousValidUntil: validUntil)
        case ("not_found", _): throw TokenError.notFound(name)
        case ("replaced_secret", _):
            throw TokenError.callerMayNotRotate(reason: "a replaced secret cannot rotate tokens: use the token's current secret")
        case ("forbidden", _):
            throw TokenError.callerMayNotRotate(
                reason: "this token may rotate only tokens whose scopes are within its own, and needs tokens:admin")
        default: throw TokenError.callerNotValid
        }
    }

    /// A rotation's overlap in whole seconds, checked, and the new secret.
    private static func rotation(_ overlap: Duration) throws -> (seconds: Int, secret: String) {
        let seconds = Int(overlap.components.seconds)
        guard (0...TokenError.maximumOverlapSeconds).contains(seconds) else { throw TokenError.invalidOverlap(seconds) }
        return (seconds, newSecret())
    }

    /// The active token with this secret, or nil.
    func authenticate(secret: String, now: Date = Date()) async throws -> AuthenticatedToken? {
        try await authenticateWithEpoch(secret: secret, now: now).token
    }

    /// The token (nil: no valid token has this secret) and the token epoch it was read under (schema/009), in one
    /// snapshot: a cache keeps the pair, and a later epoch means "look again". `validUntil` is set when the secret
    /// is a rotated token's previous one: valid until then (judged against `now`, so a test can move the clock).
    func authenticateWithEpoch(
        secret: String, now: Date = Date()
    ) async throws -> (token: AuthenticatedToken?, validUntil: Date?, epoch: Int64) {
        let hash = Self.hash(secret)
        return try await client.query(
            """
            SELECT t.name, t.scopes, t.valid_until, e.epoch FROM api_token_epoch e
            LEFT JOIN LATERAL (
                SELECT name, scopes, NULL::timestamptz AS valid_until FROM api_tokens
                WHERE secret_hash = \(hash) AND revoked_at IS NULL
                UNION ALL
                SELECT name, scopes, previous_valid_until FROM api_tokens
                WHERE previous_secret_hash = \(hash) AND revoked_at IS NULL
                LIMIT 1
            ) t ON true
            """,
            .reads, logger: logger
        ) { rows in
            for try await (name, scopes, validUntil, epoch) in rows.decode((String?, [String]?, Date?, Int64).self) {
                guard let name, let scopes, validUntil.map({ $0 > now }) ?? true else { return (nil, nil, epoch) }
                return (AuthenticatedToken(name: name, scopes: Set(scopes.compactMap(Scope.init))), validUntil, epoch)
            }
            throw CorruptRow(column: "api_token_epoch.epoch", value: "no row")
        }
    }

    func isEmpty() async throws -> Bool {
        for try await exists in try await client.query("SELECT EXISTS (SELECT 1 FROM api_tokens)", .reads, logger: logger).decode(Bool.self) {
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
