import HTTPTypes
import Hummingbird
import LedgerConsole

/// `/console/`: the console's static files. No token is needed to load them: the page asks for one and uses it only
/// as a bearer header on the public API. A strict Content-Security-Policy (scripts and styles from these files only,
/// no inline script, no other origin, no framing) is the second line behind the page writing every value as text.
struct ConsoleRoutes {
    typealias Context = LedgerRequestContext

    static let contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        + "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

    func register(on router: Router<Context>) {
        router.get("console", use: file)
        router.get("console/{file}", use: file)
    }

    @Sendable func file(_ request: Request, context: Context) async throws -> Response {
        let name = context.parameters.get("file") ?? "index.html"
        guard let asset = ConsoleAssets.asset(named: name) else { throw APIError.notFound("the console has no file \(name)") }
        var headers: HTTPFields = [
            .contentType: asset.contentType, .cacheControl: "no-cache",
            .contentSecurityPolicy: Self.contentSecurityPolicy,
        ]
        headers[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
        headers[HTTPField.Name("Referrer-Policy")!] = "no-referrer"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: asset.bytes)))
    }
}
