import AsyncHTTPClient
import Foundation
import LedgerCore
import NIOCore
import NIOHTTP1

/// The App Store Server API, as the ledger asks it about a transaction (`ledger recover`). Every answer is Apple's
/// signed JWS, returned as it came: the caller verifies it with `AppStoreJWSVerifier` before believing a word.
///
/// - A transaction Production does not know (error 4040010) is asked of Sandbox: a TestFlight or review purchase.
/// - 429: waits until the time `Retry-After` names (UNIX milliseconds) when that is within `maximumWait`, then asks
///   again, up to `maximumAttempts` in all; a later time ends the attempt (`rateLimited(until:)`).
/// - 401: the key, its id, the issuer id or the bundle id is wrong — a configuration error, never retried.
/// - 5xx or no answer: `unavailable`; asked again on the next attempt of the schedule.
public struct AppStoreServerAPI: Sendable {
    /// Apple's hosts (App Store Server API documentation).
    public static let productionURL = "https://api.storekit.itunes.apple.com"
    public static let sandboxURL = "https://api.storekit-sandbox.itunes.apple.com"

    let key: AppStoreServerAPIKey
    let productionURL: String
    let sandboxURL: String
    let http: HTTPClient
    /// How a `Retry-After` is waited for (injected by tests, which record it instead).
    let sleep: @Sendable (Duration) async throws -> Void
    let now: @Sendable () -> Date
    /// How long one exchange, head and body, may take (`ProviderHTTP.fetch`): `defaultTimeout` unless a test says.
    let timeout: Duration

    static let maximumAttempts = 3
    /// The longest a 429's `Retry-After` is waited for within one attempt; past it the attempt ends (`rateLimited`).
    static let maximumWait: Duration = .seconds(5)
    static let maximumAnswer = 1 << 20
    /// For a whole exchange, head and body (`ProviderHTTP.fetch`).
    public static let defaultTimeout: Duration = .seconds(30)

    public init(
        key: AppStoreServerAPIKey, productionURL: String = Self.productionURL, sandboxURL: String = Self.sandboxURL,
        timeout: Duration = Self.defaultTimeout, http: HTTPClient = ProviderHTTP.client, sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) },
        now: @escaping @Sendable () -> Date = Date.init
    ) {
        self.key = key
        self.productionURL = productionURL.hasSuffix("/") ? String(productionURL.dropLast()) : productionURL
        self.sandboxURL = sandboxURL.hasSuffix("/") ? String(sandboxURL.dropLast()) : sandboxURL
        self.http = http
        self.sleep = sleep
        self.now = now
        self.timeout = timeout
    }

    /// Get Transaction Info (`GET /inApps/v1/transactions/{transactionId}`): the transaction as Apple signed it
    /// (`signedTransactionInfo`), and the environment that answered.
    public func transactionInfo(_ transactionId: String) async throws(AppStoreServerAPIError) -> (signedTransaction: String, environment: AppStoreServerEnvironment) {
        guard let path = Self.pathComponent(transactionId) else { throw .invalidTransactionId(transactionId) }
        for environment in AppStoreServerEnvironment.allCases {
            let base = environment == .production ? productionURL : sandboxURL
            switch try await get(base + "/inApps/v1/transactions/" + path) {
            case .found(let body):
                guard let signed = Self.string("signedTransactionInfo", in: body) else {
                    throw .malformedAnswer("no signedTransactionInfo in \(environment.rawValue)'s answer")
                }
                return (signed, environment)
            case .transactionNotFound:
                continue
            }
        }
        throw .transactionNotFound(transactionId)
    }

    enum Answer {
        case found([UInt8])
        /// 404 with error code 4040010: this environment does not know the transaction.
        case transactionNotFound
    }

    /// One GET, signed with a new token, waiting out 429s.
    func get(_ url: String) async throws(AppStoreServerAPIError) -> Answer {
        try await send(.GET, url)
    }

    /// One request (`body`, when given, is sent as JSON), signed with a new token per attempt, waiting out 429s:
    /// every endpoint shares this path, so each answers 401, 429, 5xx and 4040010 alike.
    func send(_ method: HTTPMethod, _ url: String, json body: JSONValue? = nil) async throws(AppStoreServerAPIError) -> Answer {
        for attempt in 1...Self.maximumAttempts {
            var request = HTTPClientRequest(url: url)
            request.method = method
            if let body {
                request.headers.add(name: "Content-Type", value: "application/json")
                request.body = .bytes(ByteBuffer(bytes: body.canonicalBytes))
            }
            do {
                request.headers.add(name: "Authorization", value: "Bearer " + (try key.token(now: now())))
            } catch {
                throw .configuration("cannot sign the App Store Server API token: \(error)")
            }
            let answer: ProviderHTTP.Answer
            do {
                answer = try await ProviderHTTP.fetch(request, on: http, within: timeout, maximumAnswer: Self.maximumAnswer)
            } catch {
                throw .unavailable("no answer from \(url): \(error)")
            }
            let (status, body) = (answer.status, answer.body)
            switch status {
            case 200, 202:
                // 202: Send Consumption Information's "accepted".
                return .found(body)
            case 400, 404:
                // Apple's error codes say which refusals are for good (ask no more), which are its to lift later.
                let code = Self.errorCode(in: body)
                switch code {
                case 4_040_010?, 4_040_005?: return .transactionNotFound
                case 4_000_006?: throw .refused(code: 4_000_006, "Apple says the transaction id is not valid (4000006)")
                case 4_040_001?: throw .refused(code: 4_040_001, "Apple knows no App Store account for it (4040001)")
                case 4_040_003?:
                    throw .configuration("Apple knows no app for this bundle id (4040003): check appStore.serverAPI bundleId")
                case 4_040_002?, 4_040_004?, 4_040_006?:
                    throw .unavailable("Apple asks to be asked again later (\(code.map(String.init) ?? "-"))")
                default:
                    throw .unexpected(status: status, body: Self.text(body))
                }
            case 401:
                throw .configuration("Apple refused the token (401): check appStore.serverAPI keyId, issuerId, privateKeyPath and bundleId")
            case 429:
                // Apple's `Retry-After` is the UNIX time in milliseconds when it may be asked again (not seconds), and
                // its limits are hourly: a short wait is waited here; a longer one ends the attempt, saying until when
                // (`rateLimited`; the schedule asks again at its next delay).
                let retryAt = Self.retryAt(answer.headers.first(name: "Retry-After"), now: now()) ?? now().addingTimeInterval(1)
                let wait = Duration.seconds(max(0, retryAt.timeIntervalSince(now())))
                guard attempt < Self.maximumAttempts, wait <= Self.maximumWait else { throw .rateLimited(until: retryAt) }
                do { try await sleep(wait) } catch { throw .unavailable("cancelled while waiting to ask again") }
            case 500...:
                throw .unavailable("HTTP \(status): \(Self.text(body))")
            default:
                throw .unexpected(status: status, body: Self.text(body))
            }
        }
        throw .unavailable("rate limited (429)")
    }

    /// Apple's transaction ids are digits, its order ids letters and digits; anything that could change the path
    /// (a `/`, `..`, `?`, `%`, a non-ASCII digit) is refused.
    static func pathComponent(_ transactionId: String) -> String? {
        guard !transactionId.isEmpty, transactionId.count <= 128,
              transactionId.unicodeScalars.allSatisfy({ CharacterSet.alphanumerics.contains($0) && $0.isASCII })
        else { return nil }
        return transactionId
    }

    /// `Retry-After` as Apple sends it: the UNIX time in milliseconds. A small number (an HTTP-style delay in seconds,
    /// as a proxy might send) is read as seconds from `now`.
    static func retryAt(_ header: String?, now: Date) -> Date? {
        guard let header, let number = Int64(header.trimmingCharacters(in: .whitespaces)), number >= 0 else { return nil }
        // Milliseconds since 1970 are past 10^12 since 2001; delays in seconds are far below.
        return number >= 1_000_000_000_000
            ? Date(timeIntervalSince1970: Double(number) / 1000) : now.addingTimeInterval(Double(number))
    }

    static func errorCode(in body: [UInt8]) -> Int64? {
        guard case .int(let code)? = (try? JSONValue(parsing: body))?["errorCode"] else { return nil }
        return code
    }

    static func string(_ key: String, in body: [UInt8]) -> String? {
        guard case .string(let value)? = (try? JSONValue(parsing: body))?[key] else { return nil }
        return value
    }

    static func text(_ body: [UInt8]) -> String {
        String(decoding: body.prefix(500), as: UTF8.self)
    }
}

public enum AppStoreServerEnvironment: String, Sendable, CaseIterable {
    case production = "Production"
    case sandbox = "Sandbox"
}

/// Why Apple was not (or could not be) asked, in words an operator acts on.
public enum AppStoreServerAPIError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The key or its configuration is wrong: said once, loudly; asking again will not help.
    case configuration(String)
    /// Neither Production nor Sandbox knows the transaction.
    case transactionNotFound(String)
    /// No answer or a 5xx: ask again later.
    case unavailable(String)
    /// 429: Apple may be asked again from `until` (its `Retry-After`), not before.
    case rateLimited(until: Date)
    case unexpected(status: Int, body: String)
    case malformedAnswer(String)
    case invalidTransactionId(String)
    /// Apple refused the question for good (`code`: 4000006 an invalid transaction id, 4040001 no such account):
    /// asking again gets the same answer.
    case refused(code: Int64, String)
    /// An order id (Look Up Order ID) that is not Apple's alphanumeric form: never sent.
    case invalidOrderId(String)

    public var description: String {
        switch self {
        case .configuration(let reason): "App Store Server API configuration: \(reason)"
        case .transactionNotFound(let id): "Apple knows no transaction \(id) (asked Production, then Sandbox)"
        case .unavailable(let reason): "App Store Server API unavailable: \(reason)"
        case .rateLimited(let until): "App Store Server API rate limited (429) until \(RFC3339.format(until))"
        case .unexpected(let status, let body): "App Store Server API answered HTTP \(status): \(body)"
        case .malformedAnswer(let reason): "App Store Server API answer not understood: \(reason)"
        case .invalidTransactionId(let id): "\(id) is not an App Store transaction id"
        case .refused(_, let reason): "App Store Server API refused: \(reason)"
        case .invalidOrderId(let id): "\(id) is not an App Store order id"
        }
    }

    /// Whether asking again later may get an answer.
    public var isRetryable: Bool {
        switch self {
        case .unavailable, .rateLimited: true
        case .configuration, .transactionNotFound, .unexpected, .malformedAnswer, .invalidTransactionId, .invalidOrderId, .refused:
            false
        }
    }
}
