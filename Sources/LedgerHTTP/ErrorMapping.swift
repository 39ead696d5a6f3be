import Foundation
import Hummingbird
import NIOCore
import NIOHTTP1
import LedgerCore
import LedgerPostgres

/// The one place where errors become HTTP answers: domain refusals are 409s, malformed input 4xx with the field
/// named, an unreachable database 503 with Retry-After, and only a genuine bug a 500.
extension APIError {
    public init(from error: any Error) {
        switch error {
        case let error as APIError:
            self = error
        case let refusal as Refusal:
            self.init(.conflict, refusal.code, refusal.message, details: refusal.details)
        case let refusal as SubscriptionRefusal:
            self.init(.conflict, refusal.code, refusal.message, details: refusal.details)
        case let error as LedgerError:
            self.init(ledgerError: error)
        case let error as UnkeepableProviderMessage:
            self = .invalidRequest(field: error.field, "the provider's message cannot be kept: \(error.message)")
        case let error as EventStoreError:
            self.init(storeError: error)
        case let error as HTTPError:
            self.init(httpError: error)
        case is TokenRevoked:
            self.init(.unauthorized, "unauthorized", "the bearer token is not valid or has been revoked",
                      headers: [.wwwAuthenticate: "Bearer"])
        case is NIOTooManyBytesError:  // a body over the limit, cut off while it was being read
            self.init(httpError: HTTPError(.contentTooLarge))
        case is HTTPParserError:  // a body the parser could not read (a malformed chunk): the rest cannot be trusted
            self.init(.badRequest, "invalid_request", "the request body could not be parsed as HTTP/1.1 (a malformed chunk)",
                      details: ["field": "body"], headers: [.connection: "close"])
        case let error where DatabaseErrors.isUnstorableText(error):
            self = .invalidRequest(field: "request", "the request holds a NUL byte or a character PostgreSQL cannot store")
        case let error where DatabaseErrors.isUnavailable(error):
            self.init(.serviceUnavailable, "unavailable", "the database cannot be reached; retry shortly",
                      headers: [.retryAfter: "1"])
        default:
            self.init(.internalServerError, "internal_error", "an unexpected error occurred; it has been logged")
        }
    }

    private init(ledgerError error: LedgerError) {
        switch error {
        case .invalidEvent(let field, let message):
            self = .invalidRequest(field: field, message)
        case .unknownEventType(let field, let type):
            self.init(.unprocessableContent, "unknown_event_type", "\(type) is not an event type of this ledger",
                      details: ["field": .string(field), "type": .string(type), "known": .array(EventType.allCases.map { .string($0.rawValue) })])
        case .duplicateEventId(let id):
            self = .invalidRequest(field: "events", "event id \(id.lowercasedText) appears twice in the batch")
        }
    }

    private init(storeError error: EventStoreError) {
        switch error {
        case .versionConflict(let stream, let expected, let actual):
            self.init(.conflict, "version_conflict", "\(stream) is at version \(actual), not \(expected)",
                      details: stream.details.merging(["expected": expected.json, "actual": .int(Int64(actual))]) { $1 })
        case .idempotencyConflict(let eventId, let stored):
            self.init(.conflict, "idempotency_conflict",
                      "event id \(eventId.lowercasedText) was already used for a different event",
                      details: stored.details.merging(["eventId": .string(eventId.lowercasedText)]) { $1 })
        case .unknownPosition(let position):
            self = .invalidRequest(field: "after", "after=\(position) is not the position of a stored event")
        case .emptyAppend:
            self = .invalidRequest(field: "events", "events must hold at least one event")
        case .contended(let stream):
            self.init(.serviceUnavailable, "contended", "\(stream) is being written by many requests at once; retry shortly",
                      details: stream.details, headers: [.retryAfter: "1"])
        }
    }

    private init(httpError error: HTTPError) {
        let code = switch error.status {
        case .notFound: "not_found"
        case .methodNotAllowed: "method_not_allowed"
        case .contentTooLarge: "payload_too_large"
        case .unsupportedMediaType: "unsupported_media_type"
        case .unauthorized: "unauthorized"
        case .forbidden: "forbidden"
        default: error.status.code < 500 ? "invalid_request" : "internal_error"
        }
        let message = switch error.status {
        case .notFound: "no such route"
        case .contentTooLarge: "the request body is larger than \(JSONResponse.maximumBodySize / 1024) KiB"
        default: error.body ?? error.status.reasonPhrase
        }
        self.init(error.status, code, message, headers: error.headers)
    }
}

extension ExpectedVersion {
    /// How the API spells an expected version: absent (any), 0 (no stream yet) or N.
    var json: JSONValue {
        switch self {
        case .any: .string("any")
        case .noStream: .int(0)
        case .exactly(let version): .int(Int64(version))
        }
    }
}

/// Turns every error thrown below it into the API's JSON error response, so outer middleware (request log,
/// metrics) sees the final status.
struct ErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch {
            let apiError = APIError(from: error)
            if apiError.status == .internalServerError {
                context.logger.error("unexpected error", metadata: ["error": "\(String(reflecting: error))"])
            }
            return apiError.response()
        }
    }
}

extension StreamName {
    /// A stream in an error's details: an order's as `orderId`, as the API always named it; another kind's as `kind`
    /// and `streamId`.
    var details: [String: JSONValue] {
        kind == .order ? ["orderId": .string(id)] : ["kind": .string(kind.name), "streamId": .string(id)]
    }
}
