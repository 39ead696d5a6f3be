import AsyncHTTPClient
import Crypto
import Foundation
import LedgerCore
import NIOCore
import _CryptoExtras

/// Alipay's open-platform gateway, as the ledger asks it about a trade (`alipay.trade.query`): a form POST of the
/// common parameters (`app_id`, `method`, `charset` utf-8, `sign_type` RSA2, `timestamp` in Beijing time, `version`
/// 1.0, `biz_content` `{"out_trade_no": …}`), signed SHA256withRSA with the app's private key over the sorted
/// non-empty parameters. The answer comes back as it came: `AlipayNotificationVerifier.verifyQueryAnswer` checks
/// Alipay's signature before a word of it is believed.
public struct AlipayGateway: Sendable {
    public static let gatewayURL = "https://openapi.alipay.com/gateway.do"

    let appId: String
    let privateKey: _RSA.Signing.PrivateKey
    let url: String
    let http: HTTPClient
    let now: @Sendable () -> Date

    static let maximumAnswer = 1 << 20
    /// For a whole exchange, head and body (`ProviderHTTP.fetch`).
    static let timeout: Duration = .seconds(30)

    public init(
        appId: String, privateKey: _RSA.Signing.PrivateKey, url: String = Self.gatewayURL, http: HTTPClient = ProviderHTTP.client,
        now: @escaping @Sendable () -> Date = Date.init
    ) {
        self.appId = appId
        self.privateKey = privateKey
        self.url = url
        self.http = http
        self.now = now
    }

    /// The raw answer to `alipay.trade.query` for the order `orderId` (our order id is the `out_trade_no`).
    public func tradeQuery(orderId: String) async throws(ProviderClientError) -> [UInt8] {
        let parameters = try signed([
            "app_id": appId, "method": "alipay.trade.query", "charset": "utf-8", "sign_type": "RSA2",
            "timestamp": Self.beijingTime(now()), "version": "1.0",
            "biz_content": JSONValue.object(["out_trade_no": .string(orderId)]).canonicalJSON,
        ])
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded;charset=utf-8")
        request.body = .bytes(ByteBuffer(string: Self.formEncoded(parameters)))
        let status: Int, body: [UInt8]
        do {
            let answer = try await ProviderHTTP.fetch(request, on: http, within: Self.timeout, maximumAnswer: Self.maximumAnswer)
            (status, body) = (answer.status, answer.body)
        } catch {
            throw .unavailable("no answer from \(url): \(error)")
        }
        guard status == 200 else {
            throw status >= 500 ? .unavailable("HTTP \(status)") : .unexpected(status: status, body: String(decoding: body.prefix(500), as: UTF8.self))
        }
        return body
    }

    /// `parameters` with their `sign`: SHA256withRSA over `k=v` pairs, sorted by key, empty values left out.
    func signed(_ parameters: [String: String]) throws(ProviderClientError) -> [String: String] {
        let content = parameters.filter { !$0.value.isEmpty }.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
            .map { "\($0.key)=\($0.value)" }.joined(separator: "&")
        do {
            let signature = try privateKey.signature(for: SHA256.hash(data: Array(content.utf8)), padding: .insecurePKCS1v1_5)
            var signed = parameters
            signed["sign"] = Data(signature.rawRepresentation).base64EncodedString()
            return signed
        } catch {
            throw .configuration("cannot sign with the Alipay app private key: \(error)")
        }
    }

    /// `yyyy-MM-dd HH:mm:ss` in Beijing time (UTC+8, no daylight saving), as the gateway wants `timestamp`.
    static func beijingTime(_ date: Date) -> String {
        let text = RFC3339.format(date.addingTimeInterval(8 * 3600))  // 2026-11-25T08:00:00.000Z, shifted
        return String(text.prefix(10)) + " " + String(text.dropFirst(11).prefix(8))
    }

    static func formEncoded(_ parameters: [String: String]) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        func escape(_ text: String) -> String { text.addingPercentEncoding(withAllowedCharacters: allowed) ?? "" }
        return parameters.sorted { $0.key < $1.key }.map { escape($0.key) + "=" + escape($0.value) }.joined(separator: "&")
    }
}

/// Why a provider was not (or could not be) asked, for the clients other than Apple's.
public enum ProviderClientError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The key or its configuration is wrong: asking again will not help.
    case configuration(String)
    /// No answer or a 5xx: ask again later.
    case unavailable(String)
    case unexpected(status: Int, body: String)

    public var description: String {
        switch self {
        case .configuration(let reason): "configuration: \(reason)"
        case .unavailable(let reason): "unavailable: \(reason)"
        case .unexpected(let status, let body): "HTTP \(status): \(body)"
        }
    }
}
