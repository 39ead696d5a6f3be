import Crypto
import Foundation
import PostgresNIO
import Synchronization

/// `serve`'s authenticated tokens, kept in memory so a request does not spend a round trip on its token — while a
/// revocation still takes effect on the token's next request, on every node.
///
/// Each entry remembers the token epoch (schema/009) it was read under. A request served from the cache carries a
/// `TokenConfirmation`; the statements it runs anyway (an append's read, a history page) read the current epoch, and
/// an epoch that moved sends the token back to the database before anything is written or answered. A request whose
/// statements read no epoch is confirmed by one lookup before its answer leaves (`confirmIfPending`). Only valid
/// tokens are kept: an unknown secret costs a lookup every time, as before.
public final class TokenCache: Sendable {
    private struct Entry {
        let token: AuthenticatedToken
        /// A rotated token's previous secret is good until then; nil for a current secret.
        let validUntil: Date?
        let epoch: Int64
    }

    private let tokens: TokenStore
    /// The clock a previous secret's end is judged by (injected by tests).
    private let now: @Sendable () -> Date
    /// By the secret's SHA-256, as the database keeps it: never the secret itself.
    private let entries = Mutex<[SHA256Digest: Entry]>([:])
    /// Beyond this many tokens the cache starts again empty: a bound, not a policy (services hold a few tokens).
    static let capacity = 1_024

    init(tokens: TokenStore, now: @escaping @Sendable () -> Date = Date.init) {
        self.tokens = tokens
        self.now = now
    }

    /// The token and, when it came from memory, the confirmation its request must pass; nil for a secret that is
    /// not a valid token.
    public func authenticate(secret: String) async throws -> (token: AuthenticatedToken, confirmation: TokenConfirmation?)? {
        var text = secret
        let key = text.withUTF8 { SHA256.hash(data: UnsafeRawBufferPointer($0)) }
        let now = now()
        if let entry = entries.withLock({ $0[key] }) {
            // A rotated token's previous secret ends at its time, whether or not the epoch moves then.
            guard entry.validUntil.map({ $0 > now }) ?? true else {
                _ = entries.withLock { $0.removeValue(forKey: key) }
                return nil
            }
            return (entry.token, TokenConfirmation(epoch: entry.epoch) { [self] epoch in
                try await self.recheck(secret: secret, key: key, expected: entry.token, movedTo: epoch)
            })
        }
        let (token, validUntil, epoch) = try await tokens.authenticateWithEpoch(secret: secret, now: now)
        guard let token else { return nil }
        remember(key, Entry(token: token, validUntil: validUntil, epoch: epoch))
        return (token, nil)
    }

    /// The epoch moved since the entry was read: looks the token up again. False (and forgotten) when it is no
    /// longer valid or no longer the same token.
    private func recheck(secret: String, key: SHA256Digest, expected: AuthenticatedToken, movedTo epoch: Int64?) async throws -> Bool {
        let (token, validUntil, current) = try await tokens.authenticateWithEpoch(secret: secret, now: now())
        guard let token, token == expected else {
            _ = entries.withLock { $0.removeValue(forKey: key) }
            return false
        }
        remember(key, Entry(token: token, validUntil: validUntil, epoch: current))
        return true
    }

    private func remember(_ key: SHA256Digest, _ entry: Entry) {
        entries.withLock { entries in
            if entries.count >= Self.capacity { entries.removeAll(keepingCapacity: true) }
            entries[key] = entry
        }
    }
}

/// A cached token on probation for one request: confirmed by the first token epoch the request's statements read
/// (`TokenConfirmation.confirm(epoch:)`), or by a lookup at the end.
public final class TokenConfirmation: Sendable {
    /// The confirmation of the request this task serves; nil outside `serve` (tests, the CLI): nothing to confirm.
    @TaskLocal public static var current: TokenConfirmation?

    let epoch: Int64
    private let recheck: @Sendable (Int64?) async throws -> Bool
    private let confirmed = Mutex(false)

    init(epoch: Int64, recheck: @escaping @Sendable (Int64?) async throws -> Bool) {
        self.epoch = epoch
        self.recheck = recheck
    }

    /// Called with the epoch a request's statement has just read, before anything is written or answered.
    /// Throws `TokenRevoked` when the token is no longer valid.
    static func confirm(epoch: Int64) async throws {
        guard let confirmation = current, !confirmation.confirmed.withLock({ $0 }) else { return }
        try confirmation.settle(epoch == confirmation.epoch ? true : try await confirmation.recheck(epoch))
    }

    /// The epoch the request's cached token was read under, while it waits for confirmation; nil when there is
    /// nothing to confirm. A write decided without a read checks it itself (`AppendStatements.writeQuery`).
    static var pendingEpoch: Int64? {
        guard let confirmation = current, !confirmation.confirmed.withLock({ $0 }) else { return nil }
        return confirmation.epoch
    }

    /// The request's statement authenticated its token itself, by its secret, in the transaction of what it did
    /// (`ledger_rotate_token_as`): nothing left to confirm — a check after it would see the epoch that very statement
    /// moved, and refuse a token that rotated itself.
    static func authenticatedByStatement() {
        current?.confirmed.withLock { $0 = true }
    }

    /// For the end of a request: a lookup if none of its statements read the epoch.
    public func confirmIfPending() async throws {
        guard !confirmed.withLock({ $0 }) else { return }
        try settle(try await recheck(nil))
    }

    private func settle(_ valid: Bool) throws {
        guard valid else { throw TokenRevoked() }
        confirmed.withLock { $0 = true }
    }
}

/// The request's token was revoked (or changed) since it was cached: the request is refused as unauthenticated.
public struct TokenRevoked: Error, CustomStringConvertible {
    public var description: String { "the bearer token has been revoked" }
}
