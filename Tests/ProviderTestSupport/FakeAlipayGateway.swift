import Crypto
import Foundation
import Hummingbird
import HummingbirdTesting
import LedgerCore
import Synchronization
import _CryptoExtras

/// A stand-in for Alipay's open-platform gateway that speaks its documented protocol for `alipay.trade.query`: it
/// checks the request's common parameters and its RSA2 signature with the app's public key (as Alipay does with the
/// key the merchant uploaded), and answers `{"alipay_trade_query_response": {...}, "sign": ...}` signed with
/// Alipay's key (`ProviderTestKit.alipayKey`) over the exact text of the response object. A bad signature is answered
/// `error_response` `isv.invalid-signature`, unsigned; an order it holds no trade for, `40004` / `ACQ.TRADE_NOT_EXIST`.
public final class FakeAlipayGateway: Sendable {
    /// The app's key pair: the ledger signs with the private half, the gateway checks with the public one.
    public let appKey: _RSA.Signing.PrivateKey
    public let appId: String
    private let trades = Mutex<[String: [String: JSONValue]]>([:])
    private let log = Mutex<[String]>([])

    public init(appId: String = ProviderTestKit.alipayAppId) throws {
        self.appId = appId
        appKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
    }

    /// The app's private key as the ledger's `alipay.query.appPrivateKeyPath` file holds it.
    public var appPrivateKeyPEM: String { appKey.pemRepresentation }

    /// Holds a trade for `orderId` (`out_trade_no`).
    public func hold(orderId: String, tradeNo: String, status: String = "TRADE_SUCCESS", totalAmount: String = "12.34",
                     sendPayDate: String = "2026-11-25 16:00:00") {
        trades.withLock {
            $0[orderId] = ["out_trade_no": .string(orderId), "trade_no": .string(tradeNo), "trade_status": .string(status),
                           "total_amount": .string(totalAmount), "send_pay_date": .string(sendPayDate),
                           "buyer_logon_id": "159****5620", "code": "10000", "msg": "Success"]
        }
    }

    /// Each request as "OUTCOME out_trade_no".
    public var requests: [String] { log.withLock { $0 } }

    public func run<T: Sendable>(_ body: @Sendable @escaping (String) async throws -> T) async throws -> T {
        let router = Router()
        router.post("gateway.do") { [self] request, _ in
            let form = try await request.body.collect(upTo: 1 << 16)
            return answer(Self.parameters(String(buffer: form)))
        }
        return try await StandInServer.run(router) { base in try await body(base + "/gateway.do") }
    }


    private func answer(_ parameters: [String: String]) -> Response {
        let orderId: String? = {
            guard let content = parameters["biz_content"], case .string(let id)? = (try? JSONValue(parsing: Array(content.utf8)))?["out_trade_no"]
            else { return nil }
            return id
        }()
        guard verifies(parameters) else {
            log.withLock { $0.append("invalid-signature \(orderId ?? "-")") }
            // Unsigned, as Alipay answers a request it could not authenticate: nothing in it is to be believed,
            // and it is not a forgery either.
            let refusal = #"{"error_response":{"code":"40002","msg":"Invalid Arguments","sub_code":"isv.invalid-signature","sub_msg":"验签出错"}}"#
            return Response(status: .ok, headers: [.contentType: "application/json;charset=utf-8"],
                            body: .init(byteBuffer: ByteBuffer(string: refusal)))
        }
        guard let orderId, let trade = trades.withLock({ $0[orderId] }) else {
            log.withLock { $0.append("not-exist \(orderId ?? "-")") }
            return signed("alipay_trade_query_response", [
                "code": "40004", "msg": "Business Failed", "sub_code": "ACQ.TRADE_NOT_EXIST", "sub_msg": "交易不存在",
                "out_trade_no": .string(orderId ?? ""),
            ])
        }
        log.withLock { $0.append("found \(orderId)") }
        return signed("alipay_trade_query_response", trade)
    }

    /// Alipay's checks: the common parameters, then the RSA2 signature over every other non-empty parameter, sorted.
    func verifies(_ parameters: [String: String]) -> Bool {
        guard parameters["app_id"] == appId, parameters["method"] == "alipay.trade.query", parameters["charset"] == "utf-8",
              parameters["sign_type"] == "RSA2", parameters["version"] == "1.0", parameters["timestamp"]?.count == 19,
              let sign = parameters["sign"], let signature = Data(base64Encoded: sign)
        else { return false }
        let content = parameters.filter { $0.key != "sign" && !$0.value.isEmpty }
            .sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }.map { "\($0.key)=\($0.value)" }.joined(separator: "&")
        return appKey.publicKey.isValidSignature(
            _RSA.Signing.RSASignature(rawRepresentation: signature), for: SHA256.hash(data: Array(content.utf8)),
            padding: .insecurePKCS1v1_5)
    }

    /// The body Alipay sends: the response object's text, and `sign` over exactly that text.
    private func signed(_ key: String, _ response: [String: JSONValue]) -> Response {
        let body = (try? ProviderTestKit.alipayAnswer(response, member: key)) ?? []
        return Response(status: .ok, headers: [.contentType: "application/json;charset=utf-8"],
                        body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    static func parameters(_ form: String) -> [String: String] {
        var parameters: [String: String] = [:]
        for pair in form.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2 else { continue }
            let decode = { (text: Substring) in text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? "" }
            parameters[decode(parts[0])] = decode(parts[1])
        }
        return parameters
    }
}
