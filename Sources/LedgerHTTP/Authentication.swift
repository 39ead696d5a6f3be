import Hummingbird
import LedgerPostgres

/// Requires a bearer token with `scope`: 401 `unauthorized` without a valid one, 403 `forbidden` without the scope.
/// The token is looked up on every request, so a revocation takes effect on the next one.
struct RequireScope: RouterMiddleware {
    typealias Context = LedgerRequestContext
    let scope: Scope
    let tokens: TokenStore

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let header = request.headers[.authorization], header.count > 7,
              header.prefix(7).lowercased() == "bearer " else {
            throw APIError(.unauthorized, "unauthorized", "a bearer token is required (Authorization: Bearer <token>)",
                           headers: [.wwwAuthenticate: "Bearer"])
        }
        let secret = String(header.dropFirst(7)).trimmingCharacters(in: .whitespaces)
        // Secrets are short ASCII; anything else cannot be one of ours and is not worth a lookup.
        guard secret.utf8.count <= 256, let token = try await tokens.authenticate(secret: secret) else {
            throw APIError(.unauthorized, "unauthorized", "the bearer token is not valid or has been revoked",
                           headers: [.wwwAuthenticate: "Bearer"])
        }
        guard token.scopes.contains(scope) else {
            throw APIError(.forbidden, "forbidden", "this token lacks the \(scope.rawValue) scope",
                           details: ["scope": .string(scope.rawValue)])
        }
        context.identity.token.withLock { $0 = token }
        return try await next(request, context)
    }
}
