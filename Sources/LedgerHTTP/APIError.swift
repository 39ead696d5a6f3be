import Foundation
import HTTPTypes
import Hummingbird
import LedgerCore

/// An error as the API answers it: `{"error": {"code", "message", "details"}}` with a stable code.
public struct APIError: Error, Sendable {
    public var status: HTTPResponse.Status
    public var code: String
    public var message: String
    public var details: [String: JSONValue]
    public var headers: HTTPFields

    public init(_ status: HTTPResponse.Status, _ code: String, _ message: String, details: [String: JSONValue] = [:], headers: HTTPFields = [:]) {
        self.status = status
        self.code = code
        self.message = message
        self.details = details
        self.headers = headers
    }

    /// A malformed request; `field` names the offending field or parameter.
    public static func invalidRequest(field: String, _ message: String) -> APIError {
        APIError(.badRequest, "invalid_request", message, details: ["field": .string(field)])
    }

    public static func notFound(_ message: String) -> APIError {
        APIError(.notFound, "not_found", message)
    }

    var body: JSONValue {
        .object(["error": .object(["code": .string(code), "message": .string(message), "details": .object(details)])])
    }

    func response() -> Response {
        var response = JSONResponse.make(status: status, body: body)
        response.headers.append(contentsOf: headers)
        return response
    }

    /// Every code the API answers with; the OpenAPI document must list each (a test checks).
    public static let allCodes = [
        "invalid_request", "unauthorized", "forbidden", "not_found", "method_not_allowed", "payload_too_large",
        "unsupported_media_type", "unknown_event_type", "version_conflict", "idempotency_conflict", "invalid_transition",
        "order_exists", "transaction_bound_elsewhere", "transaction_mismatch", "already_granted", "account_mismatch",
        "product_mismatch", "environment_mismatch", "amount_mismatch", "unavailable", "internal_error", "contended",
        "provider_not_configured", "provider_message_refused", "request_timeout", "not_configured", "recovery_in_progress",
        "provider_unavailable", "subscription_mismatch", "name_taken",
    ]
}
