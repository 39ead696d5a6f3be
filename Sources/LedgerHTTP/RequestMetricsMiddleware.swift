import Hummingbird
import Metrics
import Synchronization

/// Counts requests and times them, by route, method and status — the metrics of Hummingbird's `MetricsMiddleware`
/// (`hb.requests`, `hb.request.errors`, `http.server.request.duration`, `http.server.active_requests`), recorded when
/// the answer is ready rather than after its body is written. Hummingbird's wraps every body in a closure to time its
/// writing, which sends a one-buffer answer as three writes instead of one: measured, that was a quarter of `serve`'s
/// CPU for `/healthz` (64 → 49 µs a request) and about 4 % of a history read's (BENCHMARKS.md).
struct RequestMetricsMiddleware<Context: RequestContext>: RouterMiddleware {
    private let metrics = RouteMetrics.shared

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let started = ContinuousClock.now
        let active = metrics.active(request.method)
        active.increment()
        defer { active.decrement() }
        do {
            let response = try await next(request, context)
            metrics.answered(context.endpointPath ?? "Unknown", request.method, response.status, since: started)
            return response
        } catch {
            // Only what escaped the error middleware inside: an error it answers is counted above by its status.
            let status = (error as? any HTTPResponseError)?.status ?? .internalServerError
            metrics.route(context.endpointPath ?? "NotFound", request.method, status).requests.increment()
            metrics.errors(context.endpointPath ?? "NotFound", request.method, status).increment()
            throw error
        }
    }
}

/// The metric handles of each route, method and status, made once: the metrics factory's lookup is the cost. One
/// for the process: the router's middleware and the history lane (`HistoryLane`) count into the same handles.
final class RouteMetrics: Sendable {
    static let shared = RouteMetrics()

    struct Route: Sendable {
        let requests: Counter
        let duration: Metrics.Timer
    }

    private struct Key: Hashable {
        let route: String
        let method: HTTPRequest.Method
        let status: HTTPResponse.Status

        var dimensions: [(String, String)] { [("http.route", route), ("http.request.method", method.rawValue)] }
    }

    private let routes = Mutex<[Key: Route]>([:])
    private let errorCounters = Mutex<[Key: Counter]>([:])
    private let meters = Mutex<[HTTPRequest.Method: Meter]>([:])

    func active(_ method: HTTPRequest.Method) -> Meter {
        Self.cached(meters, method) {
            Meter(label: "http.server.active_requests", dimensions: [("http.request.method", method.rawValue)])
        }
    }

    func route(_ route: String, _ method: HTTPRequest.Method, _ status: HTTPResponse.Status) -> Route {
        let key = Key(route: route, method: method, status: status)
        return Self.cached(routes, key) {
            let dimensions = key.dimensions + [("http.response.status_code", "\(status.code)")]
            return Route(
                requests: Counter(label: "hb.requests", dimensions: dimensions),
                duration: Metrics.Timer(label: "http.server.request.duration", dimensions: dimensions, preferredDisplayUnit: .seconds))
        }
    }

    /// A request answered: counted and timed under its route, method and status.
    func answered(_ route: String, _ method: HTTPRequest.Method, _ status: HTTPResponse.Status, since started: ContinuousClock.Instant) {
        let handles = self.route(route, method, status)
        handles.requests.increment()
        let elapsed = started.duration(to: .now).components
        handles.duration.recordNanoseconds(elapsed.seconds * 1_000_000_000 + elapsed.attoseconds / 1_000_000_000)
    }

    func errors(_ route: String, _ method: HTTPRequest.Method, _ status: HTTPResponse.Status) -> Counter {
        let key = Key(route: route, method: method, status: status)
        return Self.cached(errorCounters, key) {
            Counter(label: "hb.request.errors", dimensions: key.dimensions + [("error.type", "\(status.code)")])
        }
    }

    private static func cached<K: Hashable & Sendable, V: Sendable>(_ cache: borrowing Mutex<[K: V]>, _ key: K, _ make: () -> V) -> V {
        cache.withLock { values in
            if let known = values[key] { return known }
            let made = make()
            values[key] = made
            return made
        }
    }
}
