import AsyncHTTPClient
import Crypto
import Foundation
import LedgerProviders
import NIOCore
import _CryptoExtras

/// WeChat Pay API v3, as the ledger asks it about an order (`GET /v3/pay/transactions/out-trade-no/{out_trade_no}
/// ?mchid=…`). Each request carries `Authorization: WECHATPAY2-SHA256-RSA2048 mchid=…,nonce_str=…,signature=…,
/// timestamp=…,serial_no=…`, the signature SHA256withRSA by the merchant's API key over
/// `GET\n{path?query}\n{timestamp}\n{nonce}\n\n`. The answer comes back as it came, with its `Wechatpay-*` headers:
/// `WeChatPayNotificationVerifier.verifyQueryAnswer` checks the platform's signature before a word is believed.
public struct WeChatPayAPI: Sendable {
    public static let baseURL = "https://api.mch.weixin.qq.com"

    let merchantId: String
    let serial: String
    let privateKey: _RSA.Signing.PrivateKey
    let baseURL: String
    let http: HTTPClient
    let now: @Sendable () -> Date

    static let maximumAnswer = 1 << 20
    /// For a whole exchange, head and body (`ProviderHTTP.fetch`).
    static let timeout: Duration = .seconds(30)

    public init(
        merchantId: String, serial: String, privateKey: _RSA.Signing.PrivateKey, baseURL: String = Self.baseURL,
        http: HTTPClient = ProviderHTTP.client, now: @escaping @Sendable () -> Date = Date.init
    ) {
        self.merchantId = merchantId
        self.serial = serial
        self.privateKey = privateKey
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        self.http = http
        self.now = now
    }

    /// The answer about our order `orderId` (the `out_trade_no`): its status, signing headers (nil when absent) and body.
    public func queryOrder(_ orderId: String) async throws(ProviderClientError) -> (status: Int, headers: WeChatPayHeaders?, body: [UInt8]) {
        guard let id = Self.pathComponent(orderId), let mchid = Self.pathComponent(merchantId) else {
            throw .configuration("\(orderId) cannot be sent as an out_trade_no")
        }
        let path = "/v3/pay/transactions/out-trade-no/\(id)?mchid=\(mchid)"
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = .GET
        request.headers.add(name: "Authorization", value: try authorization(method: "GET", path: path, body: ""))
        do {
            // `Accept` and `User-Agent` are required: WeChat Pay answers 400 INVALID_REQUEST without them.
            let response = try await ProviderHTTP.fetch(request, on: http, within: Self.timeout, maximumAnswer: Self.maximumAnswer)
            let (status, body) = (response.status, response.body)
            if status >= 500 { throw ProviderClientError.unavailable("HTTP \(status)") }
            let field = { (name: String) in response.headers.first(name: name) }
            var headers: WeChatPayHeaders?
            if let timestamp = field("Wechatpay-Timestamp"), let nonce = field("Wechatpay-Nonce"),
               let signature = field("Wechatpay-Signature"), let serial = field("Wechatpay-Serial") {
                headers = WeChatPayHeaders(timestamp: timestamp, nonce: nonce, signature: signature, serial: serial)
            }
            return (status, headers, body)
        } catch let error as ProviderClientError {
            throw error
        } catch {
            throw .unavailable("no answer from \(baseURL): \(error)")
        }
    }

    /// The request's `Authorization` header.
    func authorization(method: String, path: String, body: String) throws(ProviderClientError) -> String {
        let timestamp = String(Int64(now().timeIntervalSince1970))
        let nonce = UUID().uuidString.replacingOccurrences(of: "-", with: "")
        let message = "\(method)\n\(path)\n\(timestamp)\n\(nonce)\n\(body)\n"
        let signature: _RSA.Signing.RSASignature
        do {
            signature = try privateKey.signature(for: SHA256.hash(data: Array(message.utf8)), padding: .insecurePKCS1v1_5)
        } catch {
            throw .configuration("cannot sign with the WeChat Pay merchant key: \(error)")
        }
        return "WECHATPAY2-SHA256-RSA2048 mchid=\"\(merchantId)\",nonce_str=\"\(nonce)\",signature=\"\(Data(signature.rawRepresentation).base64EncodedString())\",timestamp=\"\(timestamp)\",serial_no=\"\(serial)\""
    }

    /// Order ids and merchant ids are sent as they are: ASCII letters, digits, `_`, `-`, `|`, `*` (WeChat Pay's own
    /// rule for `out_trade_no`); anything else is never put in a path.
    static func pathComponent(_ text: String) -> String? {
        guard !text.isEmpty, text.count <= 64,
              text.unicodeScalars.allSatisfy({ $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "_-|*".unicodeScalars.contains($0)) })
        else { return nil }
        return text
    }
}
