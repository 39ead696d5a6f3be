import Foundation
import Hummingbird
import LedgerCore
import LedgerPostgres

/// `/v1/tokens/{name}/rotate` (scope `tokens:admin`): a new secret for a token, same name and scopes, so the actor
/// recorded on its events stays the same; the secret it replaces is accepted for `overlapSeconds` more (default an
/// hour), then refused. The same as `ledger tokens rotate`, but only by a token's current secret and only for a token
/// whose scopes are within the caller's (schema/015). Creating and revoking tokens stay the operator's commands.
struct TokenRoutes {
    typealias Context = LedgerRequestContext
    let operations: Operations

    /// How long a replaced secret is accepted when the request does not say.
    static let defaultOverlapSeconds: Int64 = 3_600

    func register(admins: RouterGroup<Context>) {
        admins.post("tokens/{name}/rotate", use: rotate)
    }

    @Sendable func rotate(_ request: Request, context: Context) async throws -> Response {
        let name = try context.pathId("name")
        // No body at all: the defaults. Any body must be JSON.
        let empty = request.headers[.contentType] == nil && (request.headers[.contentLength] ?? "0") == "0"
            && request.headers[.transferEncoding] == nil
        let body = empty ? JSONValue.object([:]) : try await JSONResponse.readBody(request)
        guard case .object(let members) = body else { throw APIError.invalidRequest(field: "body", "the body must be a JSON object") }
        if let unknown = members.keys.sorted().first(where: { $0 != "overlapSeconds" }) {
            throw APIError.invalidRequest(field: unknown, "\(unknown) is not a field of a rotation (only overlapSeconds)")
        }
        let overlap: Int64
        switch members["overlapSeconds"] {
        case nil: overlap = Self.defaultOverlapSeconds
        case .int(let seconds)? where (0...Int64(TokenError.maximumOverlapSeconds)).contains(seconds): overlap = seconds
        default:
            throw APIError.invalidRequest(
                field: "overlapSeconds", "overlapSeconds must be a whole number of seconds from 0 to \(TokenError.maximumOverlapSeconds)")
        }
        do {
            // The caller is authenticated again inside the rotation's own transaction (schema/015): a token revoked
            // since RequireScope admitted it, or a replaced secret, rotates nothing.
            let rotated = try await operations.rotateToken(
                name: name, overlap: .seconds(overlap), asCaller: try RequireScope.bearerSecret(of: request.headers))
            context.logger.notice("token rotated", metadata: ["token": "\(name)", "by": "\(context.actor)"])
            return JSONResponse.make(status: .ok, body: [
                "name": .string(rotated.name), "secret": .string(rotated.secret),
                "previousValidUntil": .time(rotated.previousValidUntil),
            ])
        } catch TokenError.notFound {
            throw APIError.notFound("no active token named \(name)")
        } catch TokenError.callerNotValid {
            throw RequireScope.notValid
        } catch TokenError.callerMayNotRotate(let reason) {
            throw APIError(.forbidden, "forbidden", reason, details: ["token": .string(name)])
        }
    }
}
