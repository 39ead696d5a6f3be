import Foundation
import LedgerCore

/// The App Store Server API's lists: a customer's transaction history, the notifications Apple could not deliver,
/// and the transactions of an order id from a customer's receipt. Each answer is returned as Apple signed it; the
/// caller verifies every string with `AppStoreJWSVerifier` before believing it. Each page is asked through the same
/// `send` as Get Transaction Info, so tokens, 401, 429 and 5xx are handled alike.
extension AppStoreServerAPI {
    /// The most pages one call follows. Apple sends 20 items a page, so 100 pages is 2,000 transactions or
    /// notifications: more than any one customer should hold. Past it the answer is returned with `complete == false`
    /// rather than asking on without end (an answer that never says `hasMore: false`). A sweep of the notification
    /// history after an outage can hold more: it reads a page at a time (`notificationHistoryPage`), this many in one
    /// round, and keeps its place for the next.
    public static let maximumPages = 100

    /// Get Transaction History v2 (`GET /inApps/v2/history/{transactionId}`): every signed transaction of the
    /// customer's history that `transactionId` belongs to, oldest first, following `revision` while `hasMore`.
    /// Production first, then Sandbox when Production does not know the transaction (4040010), as `transactionInfo`.
    public func transactionHistory(_ transactionId: String) async throws(AppStoreServerAPIError) -> AppStoreTransactionHistory {
        guard let path = Self.pathComponent(transactionId) else { throw .invalidTransactionId(transactionId) }
        environments: for environment in AppStoreServerEnvironment.allCases {
            let base = (environment == .production ? productionURL : sandboxURL) + "/inApps/v2/history/" + path
            var signed: [String] = []
            var revision: String?
            for page in 1...Self.maximumPages {
                let url = base + (revision.map { "?revision=" + Self.queryValue($0) } ?? "")
                guard case .found(let body) = try await get(url) else {
                    // Only the first page may say the environment does not know the transaction.
                    guard page == 1 else { throw .malformedAnswer("\(environment.rawValue) forgot transaction \(transactionId) on page \(page)") }
                    continue environments
                }
                let answer = try Self.page(body, items: "signedTransactions", next: "revision", from: environment)
                signed += answer.items
                guard let next = answer.next else {
                    return AppStoreTransactionHistory(signedTransactions: signed, environment: environment, complete: true)
                }
                revision = next
            }
            return AppStoreTransactionHistory(signedTransactions: signed, environment: environment, complete: false)
        }
        throw .transactionNotFound(transactionId)
    }

    /// Get Notification History (`POST /inApps/v1/notifications/history`): the `signedPayload` of every
    /// notification Apple sent, or tried to send, in `[from, to)` — with `onlyFailures`, only those that never
    /// reached us (Apple is still retrying some of them). Follows `paginationToken` while `hasMore`, at most
    /// `maximumPages` pages (`complete` false past them; `notificationHistoryPage` goes on from any page). Asked of one
    /// environment: Apple keeps 180 days of Production's history and 30 of Sandbox's.
    public func notificationHistory(
        from: Date, to: Date, onlyFailures: Bool = true, environment: AppStoreServerEnvironment = .production
    ) async throws(AppStoreServerAPIError) -> AppStoreNotificationHistory {
        var signed: [String] = []
        var token: String?
        for _ in 1...Self.maximumPages {
            let page = try await notificationHistoryPage(
                from: from, to: to, onlyFailures: onlyFailures, environment: environment, paginationToken: token)
            signed += page.signedPayloads
            guard let next = page.paginationToken else {
                return AppStoreNotificationHistory(signedPayloads: signed, environment: environment, complete: true)
            }
            token = next
        }
        return AppStoreNotificationHistory(signedPayloads: signed, environment: environment, complete: false)
    }

    /// One page of Get Notification History: the first when `paginationToken` is nil, else the page that token
    /// (from the answer before, for the very same `from`, `to` and `onlyFailures`: Apple ties it to the request)
    /// names. A sweep keeps the token between pages, so a window of any number of pages is read once, page after
    /// page, however many rounds it takes (`AppStoreNotificationSweep`).
    public func notificationHistoryPage(
        from: Date, to: Date, onlyFailures: Bool = true, environment: AppStoreServerEnvironment = .production,
        paginationToken: String?
    ) async throws(AppStoreServerAPIError) -> AppStoreNotificationHistoryPage {
        let url = (environment == .production ? productionURL : sandboxURL) + "/inApps/v1/notifications/history"
            + (paginationToken.map { "?paginationToken=" + Self.queryValue($0) } ?? "")
        let request: JSONValue = [
            "startDate": .int(Self.milliseconds(from)), "endDate": .int(Self.milliseconds(to)), "onlyFailures": .bool(onlyFailures),
        ]
        guard case .found(let body) = try await send(.POST, url, json: request) else {
            throw .malformedAnswer("\(environment.rawValue) answered 4040010 to a notification history request")
        }
        let answer = try Self.page(body, items: "notificationHistory", next: "paginationToken", from: environment) { item in
            guard case .string(let payload)? = item["signedPayload"] else { return nil }
            return payload
        }
        return AppStoreNotificationHistoryPage(signedPayloads: answer.items, paginationToken: answer.next)
    }

    /// The bundle id the key asks about (the token's `bid`): whose notification history is swept.
    public var bundleId: String { key.bundleId }

    /// Look Up Order ID (`GET /inApps/v1/lookup/{orderId}`): the signed transactions of the order id on a
    /// customer's App Store receipt (as a support request quotes it). Production only: Apple has no Sandbox
    /// lookup. An order id Apple calls invalid (status 1) is an answer, `.invalid`, not an error.
    public func lookUpOrder(_ orderId: String) async throws(AppStoreServerAPIError) -> AppStoreOrderLookup {
        guard let path = Self.pathComponent(orderId) else { throw .invalidOrderId(orderId) }
        guard case .found(let body) = try await get(productionURL + "/inApps/v1/lookup/" + path) else {
            throw .malformedAnswer("Production answered 4040010 to an order lookup")
        }
        guard let answer = try? JSONValue(parsing: body), case .int(let status)? = answer["status"] else {
            throw .malformedAnswer("no status in Production's order lookup answer: \(Self.text(body))")
        }
        switch status {
        case 0:
            let signed = try Self.strings(answer["signedTransactions"], named: "signedTransactions", from: .production)
            guard !signed.isEmpty else { throw .malformedAnswer("a valid order id with no signedTransactions") }
            return .found(signedTransactions: signed)
        case 1:
            return .invalid
        default:
            throw .malformedAnswer("order lookup status \(status), neither 0 (valid) nor 1 (invalid)")
        }
    }

    /// One page of a list: its items (each read by `item`), and the token of the next page when `hasMore` says
    /// there is one. A page that says `hasMore` without a token for the next is malformed: following it would ask for
    /// the first page again.
    static func page(
        _ body: [UInt8], items key: String, next tokenKey: String, from environment: AppStoreServerEnvironment,
        item: (JSONValue) -> String? = { if case .string(let text) = $0 { text } else { nil } }
    ) throws(AppStoreServerAPIError) -> (items: [String], next: String?) {
        guard let answer = try? JSONValue(parsing: body), case .object = answer else {
            throw .malformedAnswer("\(environment.rawValue)'s page is not a JSON object: \(text(body))")
        }
        let items = try strings(answer[key], named: key, from: environment, item: item)
        guard case .bool(true)? = answer["hasMore"] else { return (items, nil) }
        guard case .string(let next)? = answer[tokenKey], !next.isEmpty else {
            throw .malformedAnswer("\(environment.rawValue) said hasMore without a \(tokenKey)")
        }
        return (items, next)
    }

    /// The strings of an array member (absent: none); any element `item` cannot read makes the answer malformed.
    static func strings(
        _ value: JSONValue?, named key: String, from environment: AppStoreServerEnvironment,
        item: (JSONValue) -> String? = { if case .string(let text) = $0 { text } else { nil } }
    ) throws(AppStoreServerAPIError) -> [String] {
        switch value {
        case nil, .null?: return []
        case .array(let elements)?:
            var strings: [String] = []
            for element in elements {
                guard let text = item(element) else { throw .malformedAnswer("an element of \(key) in \(environment.rawValue)'s answer is not understood") }
                strings.append(text)
            }
            return strings
        default:
            throw .malformedAnswer("\(key) in \(environment.rawValue)'s answer is not an array")
        }
    }

    static func milliseconds(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded(.down)) }

    /// A token of Apple's (opaque: base64 and friends) as a query value: everything but RFC 3986's unreserved
    /// characters percent-encoded, so a `+`, `/` or `=` reaches Apple as sent.
    static func queryValue(_ text: String) -> String {
        var unreserved = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        unreserved.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? ""
    }
}

/// A customer's transaction history as Apple signed it.
public struct AppStoreTransactionHistory: Sendable, Hashable {
    /// Each `JWSTransaction`, oldest first, unverified.
    public let signedTransactions: [String]
    /// The environment that knew the transaction.
    public let environment: AppStoreServerEnvironment
    /// False when `AppStoreServerAPI.maximumPages` pages were read and Apple still had more.
    public let complete: Bool
}

/// The notifications Apple sent (or failed to send) in a window, as Apple signed them.
public struct AppStoreNotificationHistory: Sendable, Hashable {
    /// Each notification's `signedPayload`, unverified, in Apple's order.
    public let signedPayloads: [String]
    public let environment: AppStoreServerEnvironment
    /// False when `AppStoreServerAPI.maximumPages` pages were read and Apple still had more: ask a narrower window.
    public let complete: Bool
}

/// One page of the notification history, as Apple signed it.
public struct AppStoreNotificationHistoryPage: Sendable, Hashable {
    /// Each notification's `signedPayload` on the page, unverified, in Apple's order.
    public let signedPayloads: [String]
    /// The next page's token; nil on the last page (`hasMore` false).
    public let paginationToken: String?
}

/// What Look Up Order ID said about an order id.
public enum AppStoreOrderLookup: Sendable, Hashable {
    /// Status 0: the order's transactions, each a `JWSTransaction`, unverified.
    case found(signedTransactions: [String])
    /// Status 1: Apple knows no such order id for this app.
    case invalid
}
