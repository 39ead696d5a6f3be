import Foundation
import HTTPTypes
import Hummingbird
import LedgerCore
import LedgerPostgres
import LedgerProviders
import Logging

/// `/v1/providers/…`: the payment providers' own notifications. No bearer token: each message is authenticated by
/// its provider's signature, verified before anything is read from it, and a message that fails any check writes
/// nothing and is logged as a security event with the check that failed. Each provider gets the answer it expects:
/// Apple a status (non-2xx makes it retry), Alipay the text `success` / `failure`, WeChat Pay 204 or
/// `{"code": "FAIL", "message": …}`. A provider without configuration answers 501 `provider_not_configured`.
struct ProviderRoutes {
    typealias Context = LedgerRequestContext
    let ledger: Ledger
    let verifiers: ProviderVerifiers

    func register(on router: Router<Context>) {
        let providers = router.group("v1/providers")
        providers.post("app-store/notifications", use: appStoreNotification)
        providers.post("alipay/notify", use: alipayNotification)
        providers.post("wechat/notify", use: weChatPayNotification)
    }

    @Sendable func appStoreNotification(_ request: Request, context: Context) async throws -> Response {
        guard let verifier = verifiers.appStore else { throw Self.notConfigured(.appStore) }
        let body = try JSONFields(try await JSONResponse.readBody(request), path: "")
        try body.onlyAllowing(["signedPayload"])
        let signedPayload = try body.required("signedPayload", body.string)
        let notification: AppStoreNotification
        do {
            notification = try await verifier.verifyNotification(signedPayload, now: Date())
        } catch {
            throw Self.refused(.appStore, reason: error.description, context: context)
        }
        guard let message = notification.message else {
            context.logger.info("App Store TEST notification", metadata: ["notificationUUID": "\(notification.notificationUUID)"])
            return JSONResponse.make(status: .ok, body: ["outcome": "test"])
        }
        let outcome = try await ledger.recordProviderMessage(message, requestId: context.requestId)
        // An auto-renewable subscription's notification is also its subscription's event (docs/domain.md).
        guard let about = notification.subscriptionEvent, case .object(var body) = outcome.json else {
            return JSONResponse.make(status: .ok, body: outcome.json)
        }
        body["subscription"] = try await ledger.recordSubscriptionNotification(
            about.subscriptionId, event: about.event, notificationId: notification.notificationUUID, provider: .appStore,
            requestId: context.requestId
        ).json
        return JSONResponse.make(status: .ok, body: .object(body))
    }

    @Sendable func alipayNotification(_ request: Request, context: Context) async throws -> Response {
        do {
            guard let verifier = verifiers.alipay else { throw Self.notConfigured(.alipay) }
            let body = try await RequestBodyReader.collect(request, upTo: JSONResponse.maximumBodySize)
            let notification: AlipayNotification
            do {
                notification = try verifier.verify(body: body.readableBytesView)
            } catch {
                throw Self.refused(.alipay, reason: error.description, context: context)
            }
            _ = try await ledger.recordProviderMessage(notification.message(receivedAt: Date()), requestId: context.requestId)
            return Self.text(.ok, "success")
        } catch {
            return Self.text(Self.answer(to: error, from: .alipay, context: context).status, "failure")
        }
    }

    @Sendable func weChatPayNotification(_ request: Request, context: Context) async throws -> Response {
        do {
            guard let verifier = verifiers.wechatPay else { throw Self.notConfigured(.wechatPay) }
            func header(_ name: String) throws -> String {
                guard let field = HTTPField.Name(name), let value = request.headers[field] else {
                    throw APIError.invalidRequest(field: name, "the \(name) header is missing")
                }
                return value
            }
            let headers = WeChatPayHeaders(
                timestamp: try header("Wechatpay-Timestamp"), nonce: try header("Wechatpay-Nonce"),
                signature: try header("Wechatpay-Signature"), serial: try header("Wechatpay-Serial"))
            let body = try await RequestBodyReader.collect(request, upTo: JSONResponse.maximumBodySize)
            let notification: WeChatPayNotification
            do {
                notification = try verifier.verify(headers: headers, body: body.readableBytesView, now: Date())
            } catch {
                throw Self.refused(.wechatPay, reason: error.description, context: context)
            }
            _ = try await ledger.recordProviderMessage(
                notification.message(headers: headers, receivedAt: Date()), requestId: context.requestId)
            return Response(status: .noContent)
        } catch {
            let answer = Self.answer(to: error, from: .wechatPay, context: context)
            return JSONResponse.make(status: answer.status, body: ["code": "FAIL", "message": .string(answer.message)])
        }
    }

    /// The answer to a message that was not recorded, logged here: these endpoints answer in the provider's own
    /// format, so the error middleware (which logs the rest) never sees their errors. A failure of ours (5xx) is an
    /// error; a refusal (4xx) a warning, unless verification already logged it as a security event.
    static func answer(to error: any Error, from provider: Provider, context: Context) -> APIError {
        let answer = APIError(from: error)
        let metadata: Logger.Metadata = [
            "provider": "\(provider.rawValue)", "code": "\(answer.code)", "requestId": "\(context.requestId)",
        ]
        if answer.status.code >= 500 {
            context.logger.error("provider message not recorded: \(String(reflecting: error))", metadata: metadata)
        } else if answer.code != "provider_message_refused" {
            context.logger.warning("provider message refused: \(answer.message)", metadata: metadata)
        }
        return answer
    }

    static func notConfigured(_ provider: Provider) -> APIError {
        APIError(.notImplemented, "provider_not_configured",
                 "\(provider.rawValue) is not configured on this ledger (see --providers-config)",
                 details: ["provider": .string(provider.rawValue)])
    }

    /// A message that failed verification: logged as a security event, answered 403, nothing recorded.
    static func refused(_ provider: Provider, reason: String, context: Context) -> APIError {
        context.logger.warning(
            "security: provider message refused",
            metadata: ["provider": "\(provider.rawValue)", "reason": "\(reason)", "requestId": "\(context.requestId)"])
        return APIError(.forbidden, "provider_message_refused", "the \(provider.rawValue) message failed verification: \(reason)",
                        details: ["provider": .string(provider.rawValue), "reason": .string(reason)])
    }

    static func text(_ status: HTTPResponse.Status, _ text: String) -> Response {
        Response(status: status, headers: [.contentType: "text/plain; charset=utf-8"],
                 body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}

extension ProviderMessageOutcome {
    var json: JSONValue {
        switch self {
        case .recorded(let orderId, let followed, let refusal):
            var members: [String: JSONValue] = [
                "outcome": "recorded", "orderId": .string(orderId), "followed": .array(followed.map { .string($0.rawValue) }),
            ]
            members["refusal"] = refusal.map { .object(["code": .string($0.code), "message": .string($0.message)]) }
            return .object(members)
        case .duplicate(let orderId):
            return .object(["outcome": "duplicate", "orderId": orderId.map(JSONValue.string) ?? .null])
        case .unmatched:
            return ["outcome": "unmatched"]
        case .refused(let orderId, let field, let reason):
            return .object([
                "outcome": "refused", "orderId": orderId.map(JSONValue.string) ?? .null, "field": .string(field),
                "reason": .string(reason),
            ])
        }
    }
}
