import Crypto
import Foundation
import Hummingbird
import HummingbirdTesting
import LedgerCore
import Synchronization

/// A stand-in for the App Store Server API that speaks its documented protocol: it checks the ledger's bearer token
/// as Apple does (a JWT, ES256, signed with the In-App Purchase key whose public half it was given; `kid`, `iss`,
/// `aud` appstoreconnect-v1, `bid`, a live `exp`) and answers 401 otherwise; it answers Get Transaction Info with
/// the signed transaction it holds for that environment (signed by the tests' CA), 404 / 4040010 when it holds none,
/// and 429 with `Retry-After` or 503 when told to. Production and Sandbox are two path prefixes of one server.
public final class FakeAppStoreServerAPI: Sendable {
    public struct Expected: Sendable {
        public var keyId = "TESTKEY123"
        public var issuerId = "57246542-96fe-1a63-e053-0824d011072a"
        public var bundleId = ProviderTestKit.bundleId
        public init() {}
    }

    public let key = P256.Signing.PrivateKey()
    public let expected: Expected
    private let state = Mutex(State())

    struct State {
        var transactions: [String: [String: String]] = ["production": [:], "sandbox": [:]]
        var rateLimited = 0
        var unavailable = 0
        var requests: [String] = []
    }

    public init(expected: Expected = Expected()) {
        self.expected = expected
    }

    /// The `.p8` file of the key the ledger must sign with (PKCS#8 PEM, as Apple hands it out).
    public var privateKeyPEM: String { key.pemRepresentation }

    /// Holds `signedTransaction` as `environment`'s answer (`production` or `sandbox`) for `transactionId`.
    public func hold(_ signedTransaction: String, for transactionId: String, in environment: String = "production") {
        state.withLock { $0.transactions[environment, default: [:]][transactionId] = signedTransaction }
    }

    /// The next `count` requests are answered 429 with `Retry-After: 7`.
    public func rateLimit(next count: Int) { state.withLock { $0.rateLimited = count } }
    /// The next `count` requests are answered 503.
    public func failNext(_ count: Int) { state.withLock { $0.unavailable = count } }
    /// Each request as "ENVIRONMENT STATUS PATH", in order.
    public var requests: [String] { state.withLock { $0.requests } }

    /// Runs `body` with the server's base URL (`{base}/production`, `{base}/sandbox`) while it listens on loopback.
    public func run<T: Sendable>(_ body: @Sendable @escaping (String) async throws -> T) async throws -> T {
        let router = Router()
        router.get("{environment}/inApps/v1/transactions/{transactionId}") { [self] request, context in
            let environment = context.parameters.get("environment") ?? ""
            let transactionId = context.parameters.get("transactionId") ?? ""
            let response = answer(environment: environment, transactionId: transactionId, authorization: request.headers[.authorization])
            state.withLock { $0.requests.append("\(environment) \(response.status.code) \(request.uri.path)") }
            return response
        }
        return try await StandInServer.run(router, body)
    }


    private func answer(environment: String, transactionId: String, authorization: String?) -> Response {
        guard let authorization, authorization.hasPrefix("Bearer "), verifies(String(authorization.dropFirst(7))) else {
            return Self.text(.unauthorized, "Unauthenticated")
        }
        let (limited, failing, signed) = state.withLock { state -> (Bool, Bool, String?) in
            if state.rateLimited > 0 { state.rateLimited -= 1; return (true, false, nil) }
            if state.unavailable > 0 { state.unavailable -= 1; return (false, true, nil) }
            return (false, false, state.transactions[environment]?[transactionId])
        }
        if limited { return Self.json(.tooManyRequests, ["errorCode": 4_290_000, "errorMessage": "Rate limit exceeded."], headers: [.retryAfter: "7"]) }
        if failing { return Self.json(.serviceUnavailable, ["errorCode": 5_000_001, "errorMessage": "An unknown error occurred."]) }
        guard let signed else {
            return Self.json(.notFound, ["errorCode": 4_040_010, "errorMessage": "Transaction id not found."])
        }
        return Self.json(.ok, ["signedTransactionInfo": .string(signed)])
    }

    /// Apple's checks of the bearer token: its header, its claims, and its ES256 signature by the expected key.
    func verifies(_ token: String) -> Bool {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3, let header = Self.object(parts[0]), let claims = Self.object(parts[1]),
              let signature = Self.base64URL(parts[2]),
              let ecdsa = try? P256.Signing.ECDSASignature(rawRepresentation: signature),
              key.publicKey.isValidSignature(ecdsa, for: Data((parts[0] + "." + parts[1]).utf8))
        else { return false }
        let now = Int64(Date().timeIntervalSince1970)
        guard header["alg"] == "ES256", header["typ"] == "JWT", header["kid"] == .string(expected.keyId),
              claims["iss"] == .string(expected.issuerId), claims["aud"] == "appstoreconnect-v1",
              claims["bid"] == .string(expected.bundleId),
              case .int(let issued)? = claims["iat"], case .int(let expires)? = claims["exp"],
              issued <= now + 60, expires > now, expires - issued <= 3_600
        else { return false }
        return true
    }

    static func object(_ part: String) -> JSONValue? {
        guard let bytes = base64URL(part), let value = try? JSONValue(parsing: Array(bytes)), case .object = value else { return nil }
        return value
    }

    static func base64URL(_ text: String) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64)
    }

    static func json(_ status: HTTPResponse.Status, _ body: JSONValue, headers: HTTPFields = [:]) -> Response {
        var fields = headers
        fields[.contentType] = "application/json"
        return Response(status: status, headers: fields, body: .init(byteBuffer: ByteBuffer(string: body.canonicalJSON)))
    }

    static func text(_ status: HTTPResponse.Status, _ text: String) -> Response {
        Response(status: status, headers: [.contentType: "text/plain"], body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}
