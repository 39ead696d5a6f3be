import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LedgerCore
import Synchronization
import _CryptoExtras

/// A stand-in for WeChat Pay API v3's order query that speaks its documented protocol: it checks the request's
/// `Authorization: WECHATPAY2-SHA256-RSA2048 …` (merchant id, certificate serial, a fresh timestamp, and the
/// signature over `GET\n{path?query}\n{timestamp}\n{nonce}\n\n` by the merchant key whose public half it holds) and
/// answers 401 `SIGN_ERROR` otherwise, unsigned; every answer to a request it accepted is signed with the platform key (`ProviderTestKit.wechatPlatformKey`,
/// serial `platformSerial`) over `timestamp\nnonce\nbody\n`, as WeChat Pay signs.
public final class FakeWeChatPayAPI: Sendable {
    public let merchantKey: _RSA.Signing.PrivateKey
    public let merchantSerial = "3775B6A45ACD588826D15E583A95F5DD00000001"
    private let orders = Mutex<[String: [String: JSONValue]]>([:])
    private let log = Mutex<[String]>([])
    private let traffic = Mutex<(unavailable: Int, inFlight: Int, mostAtOnce: Int, delay: Duration)>((0, 0, 0, .zero))

    public init() throws {
        merchantKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
    }

    /// The merchant API private key as the ledger's `wechatPay.query.merchantPrivateKeyPath` file holds it.
    public var merchantPrivateKeyPEM: String { merchantKey.pemRepresentation }

    /// Holds the order `orderId` in `state`; `transactionId` nil until paid.
    public func hold(orderId: String, state: String, transactionId: String?, total: Int64 = 1234) {
        var order: [String: JSONValue] = [
            "appid": "wxd678efh567hg6787", "mchid": .string(ProviderTestKit.merchantId), "out_trade_no": .string(orderId),
            "trade_type": "APP", "trade_state": .string(state), "trade_state_desc": "",
            "amount": ["total": .int(total), "currency": "CNY"],
        ]
        if let transactionId {
            order["transaction_id"] = .string(transactionId)
            order["success_time"] = "2026-11-25T16:00:04+08:00"
            order["amount"] = ["total": .int(total), "payer_total": .int(total), "currency": "CNY", "payer_currency": "CNY"]
        }
        orders.withLock { $0[orderId] = order }
    }

    /// A providers file (`--providers-config`) in `directory` that trusts this stand-in's platform key and asks it at
    /// `base` with `merchantKeyPEM` (this stand-in's merchant key unless given another); returns its path.
    public func providersFile(in directory: URL, base: String, merchantKeyPEM: String? = nil) throws -> String {
        let keyFile = directory.appendingPathComponent("apiclient_key.pem")
        try Data((merchantKeyPEM ?? merchantPrivateKeyPEM).utf8).write(to: keyFile)
        let url = directory.appendingPathComponent("providers.json")
        try ProviderTestKit.json(["wechatPay": [
            "merchantId": ProviderTestKit.merchantId, "apiV3Key": ProviderTestKit.apiV3KeyText,
            "platformKeys": [["serial": ProviderTestKit.platformSerial, "pem": ProviderTestKit.wechatPlatformKey.publicKey.pemRepresentation]],
            "query": ["merchantPrivateKeyPath": keyFile.lastPathComponent, "merchantCertificateSerial": merchantSerial, "baseURL": base],
        ]]).write(to: url)
        return url.path
    }

    /// Each request as "STATUS out_trade_no".
    public var requests: [String] { log.withLock { $0 } }

    /// The next `count` queries are answered 500 `SYSTEM_ERROR` (signed, as WeChat Pay signs its errors).
    public func failNext(_ count: Int) { traffic.withLock { $0.unavailable = count } }

    /// Every answer waits `delay` first: questions that overlap are seen overlapping (`mostAtOnce`).
    public func answerAfter(_ delay: Duration) { traffic.withLock { $0.delay = delay } }

    /// How many queries are being answered now.
    public var inFlight: Int { traffic.withLock { $0.inFlight } }

    /// The most queries being answered at one moment (a test that counts overlaps asks about one order).
    public var mostAtOnce: Int { traffic.withLock { $0.mostAtOnce } }

    public func run<T: Sendable>(_ body: @Sendable @escaping (String) async throws -> T) async throws -> T {
        let router = Router()
        router.get("v3/pay/transactions/out-trade-no/{orderId}") { [self] request, context in
            let orderId = context.parameters.get("orderId") ?? ""
            let pathAndQuery = request.uri.path + (request.uri.query.map { "?" + $0 } ?? "")
            let delay = traffic.withLock { traffic in
                traffic.inFlight += 1
                traffic.mostAtOnce = max(traffic.mostAtOnce, traffic.inFlight)
                return traffic.delay
            }
            defer { traffic.withLock { $0.inFlight -= 1 } }
            if delay > .zero { try await Task.sleep(for: delay) }
            // WeChat Pay's rule: every request says who sends it and what it accepts, or it is refused before its
            // signature is looked at — unsigned, since the platform signs only what it accepted.
            guard request.headers[.userAgent]?.isEmpty == false, request.headers[.accept]?.isEmpty == false else {
                log.withLock { $0.append("400 \(orderId) (no User-Agent or Accept)") }
                return Response(status: .badRequest, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(
                    string: #"{"code":"INVALID_REQUEST","message":"Http头缺少Accept或User-Agent"}"#)))
            }
            let response = answer(orderId: orderId, mchid: request.uri.queryParameters.get("mchid"), pathAndQuery: pathAndQuery,
                                  authorization: request.headers[.authorization])
            log.withLock { $0.append("\(response.status.code) \(orderId)") }
            return response
        }
        return try await StandInServer.run(router, body)
    }


    private func answer(orderId: String, mchid: String?, pathAndQuery: String, authorization: String?) -> Response {
        guard mchid == ProviderTestKit.merchantId, verifies(authorization, pathAndQuery: pathAndQuery) else {
            // Unsigned: the platform signs only a request it accepted.
            return Response(status: .unauthorized, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(
                string: #"{"code":"SIGN_ERROR","message":"签名错误"}"#)))
        }
        let unavailable = traffic.withLock { traffic in
            defer { traffic.unavailable = max(0, traffic.unavailable - 1) }
            return traffic.unavailable > 0
        }
        if unavailable { return signed(.internalServerError, ["code": "SYSTEM_ERROR", "message": "系统错误"]) }
        guard let order = orders.withLock({ $0[orderId] }) else {
            return signed(.notFound, ["code": "ORDER_NOT_EXIST", "message": "订单不存在"])
        }
        return signed(.ok, .object(order))
    }

    /// WeChat Pay's checks of the request's signature.
    func verifies(_ authorization: String?, pathAndQuery: String) -> Bool {
        let scheme = "WECHATPAY2-SHA256-RSA2048 "
        guard let authorization, authorization.hasPrefix(scheme) else { return false }
        var fields: [String: String] = [:]
        for part in authorization.dropFirst(scheme.count).split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1)
            guard pair.count == 2 else { return false }
            fields[String(pair[0]).trimmingCharacters(in: .whitespaces)] = String(pair[1]).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
        }
        guard fields["mchid"] == ProviderTestKit.merchantId, fields["serial_no"] == merchantSerial,
              let timestamp = fields["timestamp"].flatMap(Int64.init), abs(timestamp - Int64(Date().timeIntervalSince1970)) <= 300,
              let nonce = fields["nonce_str"], let signature = fields["signature"].flatMap({ Data(base64Encoded: $0) })
        else { return false }
        let message = "GET\n\(pathAndQuery)\n\(timestamp)\n\(nonce)\n\n"
        return merchantKey.publicKey.isValidSignature(
            _RSA.Signing.RSASignature(rawRepresentation: signature), for: SHA256.hash(data: Array(message.utf8)),
            padding: .insecurePKCS1v1_5)
    }

    private func signed(_ status: HTTPResponse.Status, _ body: JSONValue) -> Response {
        let text = body.canonicalJSON
        let headers = (try? ProviderTestKit.wechatHeaders(body: Array(text.utf8), timestamp: Date()))
        var fields: HTTPFields = [.contentType: "application/json"]
        if let headers {
            fields[HTTPField.Name("Wechatpay-Timestamp")!] = headers.timestamp
            fields[HTTPField.Name("Wechatpay-Nonce")!] = headers.nonce
            fields[HTTPField.Name("Wechatpay-Signature")!] = headers.signature
            fields[HTTPField.Name("Wechatpay-Serial")!] = headers.serial
        }
        return Response(status: status, headers: fields, body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}
