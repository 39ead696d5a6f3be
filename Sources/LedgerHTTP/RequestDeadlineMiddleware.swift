import Hummingbird
import LedgerPostgres

/// Gives each request one database deadline (`serve --database-deadline`), shared by all its database calls: a
/// request is answered 503 when its time is up, however many calls it made.
struct RequestDeadlineMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        try await Deadline.forRequest { try await next(request, context) }
    }
}
