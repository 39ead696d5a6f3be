import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// One request to a provider, sent the way every client sends it:
/// - with `User-Agent` and `Accept` (WeChat Pay answers `400 INVALID_REQUEST` without them, and every provider asks
///   callers to say who they are);
/// - within one deadline for the whole exchange, head and body: `HTTPClient.execute(timeout:)` covers only the head,
///   and a body dripped a byte every 20 s held an attempt 120 s, past what the recovery lease assumes;
/// - never following a redirect: a provider's answer comes from the host configured for it (`client`);
/// - reading at most `maximumAnswer` bytes.
@usableFromInline
enum ProviderHTTP {
    /// Who asks. Providers' logs show it; WeChat Pay requires one.
    static let userAgent = "OrderLedger/1.0 (order ledger; recovery)"

    /// The client every provider is asked with unless a test gives its own: redirects refused (an answer from another
    /// host is nobody's signed word we asked for).
    @usableFromInline
    static let client = HTTPClient(
        eventLoopGroupProvider: .singleton, configuration: HTTPClient.Configuration(redirectConfiguration: .disallow))

    /// An answer: its status, headers and body.
    struct Answer: Sendable {
        var status: Int
        var headers: HTTPHeaders
        var body: [UInt8]
    }

    /// The whole-exchange deadline was reached (head or body).
    struct TimedOut: Error, CustomStringConvertible {
        let limit: Duration
        var description: String { "no complete answer within \(limit)" }
    }

    /// Sends `request` with the headers above and reads the whole answer within `limit`.
    static func fetch(
        _ request: HTTPClientRequest, on http: HTTPClient, within limit: Duration, maximumAnswer: Int
    ) async throws -> Answer {
        var request = request
        request.headers.replaceOrAdd(name: "User-Agent", value: userAgent)
        if !request.headers.contains(name: "Accept") { request.headers.add(name: "Accept", value: "application/json") }
        let sending = request
        return try await withThrowingTaskGroup(of: Answer?.self) { group in
            group.addTask {
                let response = try await http.execute(sending, deadline: .now() + TimeAmount(limit))
                let body = try await response.body.collect(upTo: maximumAnswer)
                return Answer(status: Int(response.status.code), headers: response.headers, body: Array(body.readableBytesView))
            }
            group.addTask {
                try await Task.sleep(for: limit)
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let answer = first else { throw TimedOut(limit: limit) }
            return answer
        }
    }
}
