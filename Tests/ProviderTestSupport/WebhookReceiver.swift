import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import LedgerCore
import NIOCore
import Synchronization

/// The README's verification, as a receiver writes it (README, "Webhooks", "Verify a delivery"): true when `body` was
/// signed by the ledger with `secret` (whsec_…) under the headers it came with, sent less than five minutes ago.
public func isSignedByLedger(
    body: [UInt8], id: String, timestamp: String, signatures: String, secret: String, now: Date = Date()
) -> Bool {
    guard let key = Data(base64Encoded: String(secret.dropFirst("whsec_".count))),
          let sent = TimeInterval(timestamp), abs(now.timeIntervalSince1970 - sent) < 300
    else { return false }
    let mac = HMAC<SHA256>.authenticationCode(for: Data("\(id).\(timestamp).".utf8) + body, using: SymmetricKey(data: key))
    let expected = "v1," + Data(mac).base64EncodedString()
    return signatures.split(separator: " ").contains { $0 == expected }
}

/// A real HTTP receiver on a loopback port: it keeps every delivery it is sent, checks its signature with the
/// README's code, and answers what the test says.
public final class WebhookReceiver: Sendable {
    public struct Received: Sendable {
        public let id: String
        public let timestamp: String
        public let signatures: String
        public let body: [UInt8]
        /// The connection it came on, numbered from 1 in the order the receiver first saw each (a port is no
        /// connection's name: on loopback a new connection may reuse the port of one just closed).
        public var connection: Int?
        /// What the receiver answered.
        public var status = 0
        public var json: JSONValue? { try? JSONValue(parsing: body) }
        public var streamId: String? {
            guard case .object(let top)? = json, case .object(let data)? = top["data"], case .object(let event)? = data["event"],
                  case .string(let id)? = event["streamId"] else { return nil }
            return id
        }
        public var version: Int64? {
            guard case .object(let top)? = json, case .object(let data)? = top["data"], case .object(let event)? = data["event"],
                  case .int(let version)? = event["version"] else { return nil }
            return version
        }
    }

    /// What to answer a delivery: a status, and `Retry-After` when given; it may wait first.
    public typealias Answer = @Sendable (Received) async -> (status: HTTPResponse.Status, retryAfter: Int?)

    public let received = Mutex<[Received]>([])
    /// Every connection seen, kept so that none's identity is reused by a later one.
    private let connections = Mutex<[any Channel]>([])
    public let inFlight = Mutex<(now: Int, most: Int, ids: Set<String>, concurrentDuplicates: Int)>((0, 0, [], 0))
    private let answer: Mutex<Answer>

    public init(answer: @escaping Answer = { _ in (.noContent, nil) }) {
        self.answer = Mutex(answer)
    }

    public func answer(with answer: @escaping Answer) { self.answer.withLock { $0 = answer } }

    public var all: [Received] { received.withLock { $0 } }

    /// Runs the receiver while `body` runs with its URL.
    public func run<T: Sendable>(_ body: @Sendable @escaping (String) async throws -> T) async throws -> T {
        let router = Router(context: ConnectionContext.self)
        router.post("hooks") { request, context -> Response in
            let bytes = Array(try await request.body.collect(upTo: 1 << 20).readableBytesView)
            func header(_ name: String) -> String { HTTPField.Name(name).flatMap { request.headers[$0] } ?? "" }
            let delivery = Received(
                id: header("webhook-id"), timestamp: header("webhook-timestamp"), signatures: header("webhook-signature"),
                body: bytes, connection: self.number(of: context.channel))
            self.inFlight.withLock { state in
                state.now += 1
                state.most = max(state.most, state.now)
                if !state.ids.insert(delivery.id).inserted { state.concurrentDuplicates += 1 }
            }
            defer { self.inFlight.withLock { state in state.now -= 1; state.ids.remove(delivery.id) } }
            let (status, retryAfter) = await self.answer.withLock { $0 }(delivery)
            var answered = delivery
            answered.status = Int(status.code)
            self.received.withLock { $0.append(answered) }
            var headers = HTTPFields()
            if let retryAfter { headers[.retryAfter] = String(retryAfter) }
            return Response(status: status, headers: headers)
        }
        return try await StandInServer.run(router) { base in try await body(base + "/hooks") }
    }

    private func number(of channel: any Channel) -> Int {
        connections.withLock { seen in
            if let index = seen.firstIndex(where: { $0 === channel }) { return index + 1 }
            seen.append(channel)
            return seen.count
        }
    }
}

/// A request's context, with the connection it came on.
struct ConnectionContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    let channel: any Channel

    init(source: ApplicationRequestContextSource) {
        coreContext = CoreRequestContextStorage(source: source)
        channel = source.channel
    }
}

extension WebhookReceiver {
    /// The versions each stream was acknowledged in (2xx), in the order answered.
    public func acknowledged() -> [String: [Int64]] {
        var streams: [String: [Int64]] = [:]
        for delivery in all where (200..<300).contains(delivery.status) {
            if let stream = delivery.streamId, let version = delivery.version { streams[stream, default: []].append(version) }
        }
        return streams
    }
}
