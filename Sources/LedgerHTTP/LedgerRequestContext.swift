import Hummingbird
import LedgerCore
import LedgerPostgres
import Synchronization

/// Per-request state: the request id (echoed and recorded on events) and who the token says the caller is.
public struct LedgerRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    public var requestId: String = ""
    /// Shared by reference: authentication (inner middleware) fills it, the request log (outer) reads it.
    let identity = RequestIdentity()

    public init(source: Source) {
        self.coreContext = .init(source: source)
    }

    public var token: AuthenticatedToken? { identity.token.withLock { $0 } }

    /// The actor recorded on events: the token's name.
    public var actor: String { token?.name ?? "anonymous" }

    /// Bodies are read with our own limit (`JSONResponse.maximumBodySize`); this is Hummingbird's outer cap.
    public var maxUploadSize: Int { JSONResponse.maximumBodySize }
}

/// Who the request's token turned out to be, once authentication has run.
final class RequestIdentity: Sendable {
    let token = Mutex<AuthenticatedToken?>(nil)
}

extension LedgerRequestContext {
    /// An id from the path (order, transaction), refused as a 400 naming it when it breaks the id rule: no route
    /// looks up, or echoes in its 404, an id the ledger could never have stored (`..`, 80 KB of text).
    func pathId(_ name: String) throws -> String {
        let id = try parameters.require(name)
        let (valid, rule) = name == "orderId"
            ? (Identifier.isValidOrderId(id), Identifier.orderRule) : (Identifier.isValid(id), Identifier.rule)
        guard valid else { throw APIError.invalidRequest(field: name, "\(name) " + rule) }
        return id
    }
}
