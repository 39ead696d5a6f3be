import Hummingbird
import LedgerPostgres

/// Requires a bearer token with `scope`: 401 `unauthorized` without a valid one, 403 `forbidden` without the scope.
/// Tokens come from the `TokenCache`; a cached one is confirmed by the request's own statements or, failing that,
/// by a lookup before the answer leaves, so a revocation takes effect on the next request.
struct RequireScope: RouterMiddleware {
    typealias Context = LedgerRequestContext
    let scope: Scope
    let tokens: TokenCache

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let secret = try Self.bearerSecret(of: request.headers)
        guard secret.utf8.count <= Self.longestSecret, let (token, confirmation) = try await tokens.authenticate(secret: secret) else {
            throw Self.notValid
        }
        guard let confirmation else { return try await authorized(token, request, context, next) }
        // From the cache: whatever the route does, the token is confirmed before its answer (or error) leaves.
        do {
            let response = try await TokenConfirmation.$current.withValue(confirmation) {
                try await authorized(token, request, context, next)
            }
            try await confirmation.confirmIfPending()
            return response
        } catch is TokenRevoked {
            throw Self.notValid
        } catch {
            do { try await confirmation.confirmIfPending() } catch is TokenRevoked { throw Self.notValid }
            throw error
        }
    }

    private func authorized(
        _ token: AuthenticatedToken, _ request: Request, _ context: Context, _ next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        guard token.scopes.contains(scope) else {
            throw APIError(.forbidden, "forbidden", "this token lacks the \(scope.rawValue) scope",
                           details: ["scope": .string(scope.rawValue)])
        }
        context.identity.token.withLock { $0 = token }
        return try await next(request, context)
    }

    /// The secret of the request's `Authorization: Bearer` header; a 401 without one.
    static func bearerSecret(of headers: HTTPFields) throws -> String {
        try bearerSecret(authorization: headers.value(of: .authorization))
    }

    /// The secret of an `Authorization` value (`Bearer <token>`); a 401 without one.
    static func bearerSecret(authorization header: String?) throws -> String {
        // Cut at a byte offset, on the bytes: counting and cutting `Character`s walked the whole header on every
        // request, and a `String` cut at a byte offset looks for the character boundary.
        guard let header, header.utf8.count > 7,
              header.utf8.prefix(7).equalsIgnoringASCIICase("bearer ") else {
            throw APIError(.unauthorized, "unauthorized", "a bearer token is required (Authorization: Bearer <token>)",
                           headers: [.wwwAuthenticate: "Bearer"])
        }
        return String(Substring(header.utf8.dropFirst(7)).trimmingOptionalWhitespace)
    }

    /// Secrets are short ASCII; anything longer cannot be one of ours and is not worth a lookup.
    static let longestSecret = 256

    static let notValid = APIError(
        .unauthorized, "unauthorized", "the bearer token is not valid or has been revoked", headers: [.wwwAuthenticate: "Bearer"])
}
