import AsyncHTTPClient
import Foundation
import LedgerCore
import LedgerPostgres
import NIOCore
import NIOHTTP1

/// Sends deliveries to one endpoint, signed (`WebhookSignature`), and says what came of each (`WebhookAttempt`):
/// - to the address `WebhookAddressPolicy` checked, by a client of its own that connects there whatever the name
///   resolves to next (TLS still checks the certificate for the URL's host);
/// - never following a redirect (a 3xx is a failed attempt: the receiver is the URL configured);
/// - within `timeout` for the whole exchange, its answer's first 512 bytes kept, the rest not read.
struct WebhookSender {
    static let userAgent = "OrderLedger-Webhooks/1.0"
    static let keptAnswer = 512

    /// The endpoint's URL, as it was when its host was checked.
    let url: String
    let timeout: Duration
    let node: String
    private let connection: Result<HTTPClient, WebhookAttempt.Outcome.Failure>

    /// Resolves and checks the target's host; what is sent after goes to the address checked.
    init(target: WebhookTarget, policy: WebhookAddressPolicy, timeout: Duration, connections: Int, node: String) async {
        self.url = target.url
        self.timeout = timeout
        self.node = node
        do {
            let url = try WebhookEndpointURL(target.url)
            let port = url.url.port ?? (url.isSecure ? 443 : 80)
            let address = try await policy.address(for: url.host, port: port)
            var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
            configuration.dnsOverride = [url.host: address.description]
            configuration.timeout.connect = .seconds(Int64(min(timeout, .seconds(10)).components.seconds))
            configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = connections
            connection = .success(HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration))
        } catch let refused as WebhookAddressPolicy.RefusedAddress {
            connection = .failure(.init(outcome: .refusedAddress, reason: refused.description))
        } catch {
            connection = .failure(.init(outcome: .unreachable, reason: String(describing: error)))
        }
    }

    /// One attempt of `delivery` at `now`, signed with `secrets` (the endpoint's of this round: a rotation between
    /// rounds signs with the new one at once), and the receiver's `Retry-After` when it gave one (in seconds).
    func send(_ delivery: WebhookDelivery, signedWith secrets: [WebhookSecret], now: Date) async -> (attempt: WebhookAttempt, retryAfter: Duration?) {
        let started = ContinuousClock.now
        func attempt(_ outcome: WebhookAttempt.Outcome, status: Int? = nil, _ response: String) -> WebhookAttempt {
            let elapsed = ContinuousClock.now - started
            return WebhookAttempt(
                at: now, node: node, outcome: outcome, status: status,
                latencyMilliseconds: Int(elapsed.components.seconds) * 1_000 + Int(elapsed.components.attoseconds / 1_000_000_000_000_000),
                response: String(response.prefix(Self.keptAnswer)))
        }
        let client: HTTPClient
        switch connection {
        case .success(let connected): client = connected
        case .failure(let failure): return (attempt(failure.outcome, failure.reason), nil)
        }
        let timestamp = Int64(now.timeIntervalSince1970)
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "User-Agent", value: Self.userAgent)
        request.headers.add(name: "webhook-id", value: delivery.messageId)
        request.headers.add(name: "webhook-timestamp", value: String(timestamp))
        request.headers.add(
            name: "webhook-signature",
            value: WebhookSignature.header(id: delivery.messageId, timestamp: timestamp, body: delivery.body, secrets: secrets))
        request.body = .bytes(delivery.body)
        do {
            let answer = try await exchange(request, on: client)
            let said = String(decoding: answer.firstBytes, as: UTF8.self)
            switch answer.status {
            case 200..<300: return (attempt(.delivered, status: answer.status, said), nil)
            case 410: return (attempt(.gone, status: answer.status, said), nil)
            default: return (attempt(.failed, status: answer.status, said), answer.retryAfter)
            }
        } catch is TimedOut {
            return (attempt(.timeout, "no answer within \(timeout)"), nil)
        } catch {
            return (attempt(.unreachable, String(describing: error)), nil)
        }
    }

    /// Whether its host resolved to an address the policy allows (else every attempt fails at once, with why).
    var resolved: Bool {
        if case .success = connection { true } else { false }
    }

    func shutdown() async {
        if case .success(let client) = connection { try? await client.shutdown() }
    }

    private struct Answer: Sendable {
        var status: Int
        var retryAfter: Duration?
        var firstBytes: [UInt8]
    }

    private struct TimedOut: Error {}

    /// The exchange, head and first bytes of the body, within `timeout` (`execute`'s own deadline covers only the head).
    private func exchange(_ request: HTTPClientRequest, on client: HTTPClient) async throws -> Answer {
        try await withThrowingTaskGroup(of: Answer?.self) { group in
            group.addTask { [timeout] in
                let response = try await client.execute(request, deadline: .now() + TimeAmount(timeout))
                var kept: [UInt8] = []
                for try await chunk in response.body {
                    kept += chunk.readableBytesView.prefix(Self.keptAnswer - kept.count)
                    if kept.count >= Self.keptAnswer { break }
                }
                let retryAfter = response.headers.first(name: "Retry-After").flatMap { Int($0) }.map { Duration.seconds(max(0, $0)) }
                return Answer(status: Int(response.status.code), retryAfter: retryAfter, firstBytes: kept)
            }
            group.addTask { [timeout] in
                try await Task.sleep(for: timeout)
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let answer = first else { throw TimedOut() }
            return answer
        }
    }
}

extension WebhookAttempt.Outcome {
    /// An attempt that could not be sent: why.
    struct Failure: Error {
        let outcome: WebhookAttempt.Outcome
        let reason: String
    }
}
