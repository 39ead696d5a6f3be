import Hummingbird
import HummingbirdTesting
import Synchronization

/// Runs a provider's stand-in (`router`) on a free loopback port while `body` runs with its base URL.
public enum StandInServer {
    public static func run<Context: RequestContext, T: Sendable>(
        _ router: Router<Context>, _ body: @Sendable @escaping (String) async throws -> T
    ) async throws -> T where Context.Source == ApplicationRequestContextSource {
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        let box = Mutex<T?>(nil)
        try await app.test(.live) { client in
            guard let port = client.port else { throw NoPort() }
            let value = try await body("http://127.0.0.1:\(port)")
            box.withLock { $0 = value }
        }
        guard let value = box.withLock({ $0 }) else { throw NoPort() }
        return value
    }

    struct NoPort: Error {}
}
