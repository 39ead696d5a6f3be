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
///
/// It also answers the lists, each behind the same token check: Get Transaction History v2 (a history held per
/// transaction id, `pageSize` a page, `revision` the next page's token), Get Notification History (notifications held
/// with their date; `startDate` inclusive, `endDate` exclusive, `onlyFailures`; `paginationToken` tied to the window
/// it was given for, as Apple's is), Look Up Order ID (status 0 with the order's transactions, 1 otherwise), Get
/// All Subscription Statuses (the items held for the transaction id asked) and Send Consumption Information (v2, its
/// body checked field by field).
/// Pages are `pageSize` long (Apple's are 20), so a test with a handful of items crosses pages.
public final class FakeAppStoreServerAPI: Sendable {
    public struct Expected: Sendable {
        public var keyId = "TESTKEY123"
        public var issuerId = "57246542-96fe-1a63-e053-0824d011072a"
        public var bundleId = ProviderTestKit.bundleId
        public init() {}
    }

    public let key = P256.Signing.PrivateKey()
    public let expected: Expected
    /// Read and written by the stand-in's endpoints, in this file and its extensions.
    let state = Mutex(State())

    struct State {
        var transactions: [String: [String: String]] = ["production": [:], "sandbox": [:]]
        var histories: [String: [String: [String]]] = ["production": [:], "sandbox": [:]]
        var notifications: [String: [HeldNotification]] = ["production": [], "sandbox": []]
        var orders: [String: [String]] = [:]
        var statuses: [String: [String: [JSONValue]]] = ["production": [:], "sandbox": [:]]
        /// The transactions each environment knows for Send Consumption Information, and the answers it accepted.
        var consumable: [String: Set<String>] = ["production": [], "sandbox": []]
        var consumptionAnswers: [(environment: String, transactionId: String, body: JSONValue)] = []
        var notificationRequests: [(environment: String, body: JSONValue)] = []
        var rateLimited = 0
        var retryAfterSeconds: Double = 2
        var unavailable = 0
        /// The next answers' HTTP status and Apple error code, given before anything else is looked at.
        var errors: [(status: HTTPResponse.Status, code: Int64)] = []
        /// Get Transaction Info's answers are sent a byte every this long (a link that drips, or a host that hangs).
        var drip: Duration?
        var requests: [String] = []
    }

    struct HeldNotification {
        let signedPayload: String
        let date: Date
        let failed: Bool
    }

    /// How many items a page of a list holds: never more than Apple's 20, fewer by default so that a test with a
    /// handful of items crosses pages.
    public let pageSize: Int
    /// Apple's page: "a maximum of 20 notification history records per response" (NotificationHistoryResponse).
    public static let applePageSize = 20

    public init(expected: Expected = Expected(), pageSize: Int = 2) {
        self.expected = expected
        self.pageSize = min(max(pageSize, 1), Self.applePageSize)
    }

    /// The `.p8` file of the key the ledger must sign with (PKCS#8 PEM, as Apple hands it out).
    public var privateKeyPEM: String { key.pemRepresentation }

    /// Holds `signedTransaction` as `environment`'s answer (`production` or `sandbox`) for `transactionId`.
    public func hold(_ signedTransaction: String, for transactionId: String, in environment: String = "production") {
        state.withLock { $0.transactions[environment, default: [:]][transactionId] = signedTransaction }
    }

    /// Holds `signedTransactions` (oldest first) as `environment`'s transaction history of `transactionId`.
    public func holdHistory(_ signedTransactions: [String], for transactionId: String, in environment: String = "production") {
        state.withLock { $0.histories[environment, default: [:]][transactionId] = signedTransactions }
    }

    /// Holds a notification Apple sent, or tried to send (`failed`), at `date`, in `environment`'s history.
    public func holdNotification(_ signedPayload: String, sentAt date: Date, failed: Bool = true, in environment: String = "production") {
        state.withLock { $0.notifications[environment, default: []].append(HeldNotification(signedPayload: signedPayload, date: date, failed: failed)) }
    }

    /// Holds the transactions of `orderId` for Look Up Order ID (Production: Apple has no Sandbox lookup).
    public func holdOrder(_ orderId: String, signedTransactions: [String]) {
        state.withLock { $0.orders[orderId] = signedTransactions }
    }

    /// The JSON bodies of the Get Notification History requests, in order.
    public var notificationRequests: [JSONValue] { state.withLock { $0.notificationRequests.map(\.body) } }
    /// The JSON bodies of the Get Notification History requests to `environment` (`production`, `sandbox`), in order.
    public func notificationRequests(in environment: String) -> [JSONValue] {
        state.withLock { $0.notificationRequests.filter { $0.environment == environment }.map(\.body) }
    }

    /// The next `count` requests are answered 429 with `Retry-After` as Apple sends it: the UNIX time in milliseconds
    /// when it may be asked again, `seconds` from the moment of each answer.
    public func rateLimit(next count: Int, retryAfter seconds: Double = 2) {
        state.withLock { $0.rateLimited = count; $0.retryAfterSeconds = seconds }
    }
    /// The next request is answered `status` with Apple's JSON error `code` (4000006, 4040001, 4040003…).
    public func answerNext(status: Int, errorCode code: Int64) {
        state.withLock { $0.errors.append((HTTPResponse.Status(code: status), code)) }
    }
    /// From now on, Get Transaction Info answers 200 at once and then drips its body a byte every `interval`: an
    /// answer that never ends in any time a question may take.
    public func dripAnswers(every interval: Duration) {
        state.withLock { $0.drip = interval }
    }
    /// The next `count` requests are answered 503.
    public func failNext(_ count: Int) { state.withLock { $0.unavailable = count } }
    /// Each request as "ENVIRONMENT STATUS PATH", in order (`PATH?QUERY` when it had a query).
    public var requests: [String] { state.withLock { $0.requests } }

    /// Runs `body` with the server's base URL (`{base}/production`, `{base}/sandbox`) while it listens on loopback.
    public func run<T: Sendable>(_ body: @Sendable @escaping (String) async throws -> T) async throws -> T {
        let router = Router()
        router.get("{environment}/inApps/v1/transactions/{transactionId}") { [self] request, context in
            let environment = context.parameters.get("environment") ?? ""
            let transactionId = context.parameters.get("transactionId") ?? ""
            if let drip = state.withLock({ $0.drip }) {
                state.withLock { $0.requests.append("\(environment) drip \(request.uri.path)") }
                return Self.dripping(every: drip)
            }
            let response = answer(environment: environment, transactionId: transactionId, authorization: request.headers[.authorization])
            state.withLock { $0.requests.append("\(environment) \(response.status.code) \(request.uri.path)") }
            return response
        }
        router.get("{environment}/inApps/v2/history/{transactionId}") { [self] request, context in
            let environment = context.parameters.get("environment") ?? ""
            let response = gate(request.headers[.authorization]) ?? history(
                environment: environment, transactionId: context.parameters.get("transactionId") ?? "",
                revision: request.uri.queryParameters.get("revision"))
            record(environment, response, request)
            return response
        }
        router.post("{environment}/inApps/v1/notifications/history") { [self] request, context in
            let environment = context.parameters.get("environment") ?? ""
            let bytes = try await request.body.collect(upTo: 1 << 16)
            let body = try? JSONValue(parsing: bytes.readableBytesView)
            let response = gate(request.headers[.authorization]) ?? notificationHistory(
                environment: environment, body: body, contentType: request.headers[.contentType],
                token: request.uri.queryParameters.get("paginationToken"))
            state.withLock { $0.notificationRequests.append((environment, body ?? .null)) }
            record(environment, response, request)
            return response
        }
        router.get("{environment}/inApps/v1/subscriptions/{transactionId}") { [self] request, context in
            let environment = context.parameters.get("environment") ?? ""
            let response = gate(request.headers[.authorization]) ?? statuses(
                environment: environment, transactionId: context.parameters.get("transactionId") ?? "",
                filter: request.uri.queryParameters.getAll("status"))
            record(environment, response, request)
            return response
        }
        router.put("{environment}/inApps/v2/transactions/consumption/{transactionId}") { [self] request, context in
            let environment = context.parameters.get("environment") ?? ""
            let transactionId = context.parameters.get("transactionId") ?? ""
            let bytes = try await request.body.collect(upTo: 1 << 16)
            let response = gate(request.headers[.authorization]) ?? consumption(
                environment: environment, transactionId: transactionId, contentType: request.headers[.contentType],
                body: try? JSONValue(parsing: bytes.readableBytesView))
            record(environment, response, request)
            return response
        }
        router.get("{environment}/inApps/v1/lookup/{orderId}") { [self] request, context in
            let environment = context.parameters.get("environment") ?? ""
            let orderId = context.parameters.get("orderId") ?? ""
            let response = gate(request.headers[.authorization]) ?? state.withLock { state in
                // Apple has no Sandbox lookup: only Production knows orders.
                guard environment == "production", let signed = state.orders[orderId] else {
                    return Self.json(.ok, ["status": 1])
                }
                return Self.json(.ok, ["status": 0, "signedTransactions": .array(signed.map(JSONValue.string))])
            }
            record(environment, response, request)
            return response
        }
        return try await StandInServer.run(router, body)
    }

    func record(_ environment: String, _ response: Response, _ request: Request) {
        let path = request.uri.path + (request.uri.query.map { "?" + $0 } ?? "")
        state.withLock { $0.requests.append("\(environment) \(response.status.code) \(path)") }
    }

    /// A 200 whose body comes a byte every `interval`, 4 KiB in all: it ends when the client gives up (the write fails).
    private static func dripping(every interval: Duration) -> Response {
        Response(status: .ok, headers: [.contentType: "application/json"], body: ResponseBody { writer in
            for byte in Array(#"{"signedTransactionInfo":""#.utf8) + Array(repeating: UInt8(ascii: "a"), count: 4096) {
                try await writer.write(ByteBuffer(bytes: [byte]))
                try await Task.sleep(for: interval)
            }
            try await writer.finish(nil)
        })
    }

    /// What every endpoint answers before looking at the question: 401 to a token Apple would refuse, then the
    /// 429s and 503s it was told to give. Nil: the question may be answered.
    func gate(_ authorization: String?) -> Response? {
        guard let authorization, authorization.hasPrefix("Bearer "), verifies(String(authorization.dropFirst(7))) else {
            return Self.text(.unauthorized, "Unauthenticated")
        }
        let (limited, failing, retryAfter) = state.withLock { state -> (Bool, Bool, Double) in
            if state.rateLimited > 0 { state.rateLimited -= 1; return (true, false, state.retryAfterSeconds) }
            if state.unavailable > 0 { state.unavailable -= 1; return (false, true, 0) }
            return (false, false, 0)
        }
        if limited {
            let retryAt = String(Int64((Date().timeIntervalSince1970 + retryAfter) * 1000))
            return Self.json(.tooManyRequests, ["errorCode": 4_290_000, "errorMessage": "Rate limit exceeded."], headers: [.retryAfter: retryAt])
        }
        if failing { return Self.json(.serviceUnavailable, ["errorCode": 5_000_001, "errorMessage": "An unknown error occurred."]) }
        if let error = state.withLock({ $0.errors.isEmpty ? nil : $0.errors.removeFirst() }) {
            return Self.json(error.status, ["errorCode": .int(error.code), "errorMessage": "As told."])
        }
        return nil
    }

    /// A page of the history: `revision` (absent on the first page) is the next page's token this server gave.
    private func history(environment: String, transactionId: String, revision: String?) -> Response {
        guard let signed = state.withLock({ $0.histories[environment]?[transactionId] }) else {
            return Self.json(.notFound, ["errorCode": 4_040_010, "errorMessage": "Transaction id not found."])
        }
        var offset = 0
        if let revision {
            guard let decoded = Self.offset(revision, prefix: "history:\(transactionId):") else {
                return Self.json(.badRequest, ["errorCode": 4_000_005, "errorMessage": "Invalid request. The revision is invalid."])
            }
            offset = decoded
        }
        let page = Array(signed.dropFirst(offset).prefix(pageSize))
        let next = offset + page.count
        return Self.json(.ok, [
            "bundleId": .string(expected.bundleId), "appAppleId": .int(ProviderTestKit.appAppleId),
            "environment": environment == "sandbox" ? "Sandbox" : "Production",
            "hasMore": .bool(next < signed.count), "revision": .string(Self.token(next, prefix: "history:\(transactionId):")),
            "signedTransactions": .array(page.map(JSONValue.string)),
        ])
    }

    /// A page of the notification history: the request's window and `onlyFailures`, then `paginationToken` (given by
    /// this server for the same request) for the pages after the first.
    private func notificationHistory(environment: String, body: JSONValue?, contentType: String?, token: String?) -> Response {
        func bad(_ code: Int64, _ message: String) -> Response {
            Self.json(.badRequest, ["errorCode": .int(code), "errorMessage": .string("Invalid request. " + message)])
        }
        guard contentType?.hasPrefix("application/json") == true, let body, case .int(let start)? = body["startDate"] else {
            return bad(4_000_015, "The start date is not a timestamp value represented in milliseconds.")
        }
        guard case .int(let end)? = body["endDate"] else {
            return bad(4_000_016, "The end date is not a timestamp value represented in milliseconds.")
        }
        guard start < end else { return bad(4_000_013, "The end date precedes the start date or the dates are the same.") }
        let days = environment == "sandbox" ? 30.0 : 180.0
        guard Double(start) >= (Date().timeIntervalSince1970 - days * 86_400) * 1000 else {
            return bad(4_000_012, "The start date is earlier than the allowed start date.")
        }
        let onlyFailures = body["onlyFailures"] == .bool(true)
        // Tied to the request it was given for, environment included: a token of another window is refused.
        let window = "notifications:\(environment):\(start):\(end):\(onlyFailures):"
        var offset = 0
        if let token {
            guard let decoded = Self.offset(token, prefix: window) else { return bad(4_000_014, "The pagination token is invalid.") }
            offset = decoded
        }
        let held = state.withLock { $0.notifications[environment] ?? [] }.filter { notification in
            let sent = Int64((notification.date.timeIntervalSince1970 * 1000).rounded(.down))
            return start <= sent && sent < end && (notification.failed || !onlyFailures)
        }
        let page = Array(held.dropFirst(offset).prefix(pageSize))
        let next = offset + page.count
        var answer: [String: JSONValue] = [
            "hasMore": .bool(next < held.count),
            "notificationHistory": .array(page.map { notification in
                [
                    "signedPayload": .string(notification.signedPayload),
                    "sendAttempts": [[
                        "attemptDate": .int(Int64(notification.date.timeIntervalSince1970 * 1000)),
                        "sendAttemptResult": notification.failed ? "TIMED_OUT" : "SUCCESS",
                    ]],
                ]
            }),
        ]
        if next < held.count { answer["paginationToken"] = .string(Self.token(next, prefix: window)) }
        return Self.json(.ok, .object(answer))
    }

    /// An opaque page token, as Apple's are: base64 (with `+`, `/`, `=`, which must reach us percent-encoded).
    static func token(_ offset: Int, prefix: String) -> String {
        Data((prefix + String(offset)).utf8).base64EncodedString()
    }

    static func offset(_ token: String, prefix: String) -> Int? {
        guard let data = Data(base64Encoded: token), let text = String(data: data, encoding: .utf8), text.hasPrefix(prefix) else { return nil }
        return Int(text.dropFirst(prefix.count))
    }


    private func answer(environment: String, transactionId: String, authorization: String?) -> Response {
        if let refused = gate(authorization) { return refused }
        guard let signed = state.withLock({ $0.transactions[environment]?[transactionId] }) else {
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
