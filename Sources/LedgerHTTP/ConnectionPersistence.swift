import NIOCore
import NIOHTTP1
import NIOHTTPTypesHTTP1

/// Ends a connection after a response when either side said it ends there: a request that does not keep the
/// connection (HTTP/1.0 without `Connection: keep-alive`, HTTP/1.1 with `Connection: close`), or a response marked
/// `Connection: close` (a body refused unread: 413, 408, a malformed chunk). The server ends a connection only for a
/// request's own `Connection: close` (Hummingbird 2.28's `HTTPChannelHandler`): an HTTP/1.0 client, or one answered
/// 413, had its socket held open until the idle timeout (30 s) — a file descriptor per such client.
///
/// It also ends when the answer leaves before the request's body was read and more than `largestDrain` (256 KiB, the
/// JSON bodies' limit) of it, or a chunked rest of unknown size, is still to come: a 401, 403 or 503 given
/// before the body. Hummingbird reads such a body to its end before the next request, so a client that declared
/// 100 MB and sent none held its connection until the body timeout (60 s), and one that sent it had it all read for
/// nothing. A smaller rest is still read and the connection kept, as a client retrying on it expects.
///
/// A response to a request that ends the connection says so (`Connection: close`), as HTTP/1.1 asks. The handler
/// reads HTTP/1 parts, where the request's version is still known: it sits before the codec to HTTP types, where
/// `Installer` puts it.
final class ConnectionPersistence: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// Whether each request read and not yet answered keeps its connection, oldest first: a client may send its next
    /// request (`Connection: close`) before the one before it is answered, and that one's answer keeps the connection.
    private var keepsConnection: [Bool] = []
    /// Set once the answer being written ends the connection.
    private var endsAfterResponse = false
    /// The newest request's body while its end is still to come: the bytes still declared (`Content-Length` less what
    /// has been read), or a chunked body's rest of unknown size. Nil once its end is read, and for a request without one.
    private var bodyToCome: BodyToCome?

    enum BodyToCome { case declared(Int), chunked }

    /// The most of a body answered unread that is read (and thrown away) to keep the connection.
    static let largestDrain = 256 * 1024

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            keepsConnection.append(head.isKeepAlive)
            bodyToCome = Self.bodyToCome(of: head)
        case .body(let part):
            if case .declared(let left) = bodyToCome { bodyToCome = .declared(left - part.readableBytes) }
        case .end:
            bodyToCome = nil
        }
        context.fireChannelRead(data)
    }

    /// A request's body as its head declares it: without `Content-Length` or `Transfer-Encoding` it has none.
    static func bodyToCome(of head: HTTPRequestHead) -> BodyToCome? {
        if let length = head.headers["content-length"].first.flatMap({ Int($0) }) { return .declared(length) }
        return head.headers["transfer-encoding"].isEmpty ? nil : .chunked
    }

    /// Whether the request being answered (the oldest unanswered) still has more of its body to come than is worth
    /// reading: a later request's head is read only after this one's end, so it is the newest when its body is unread.
    private var answersBeforeALargeBody: Bool {
        guard keepsConnection.count == 1, let bodyToCome else { return false }
        switch bodyToCome {
        case .declared(let left): return left > Self.largestDrain
        case .chunked: return true
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(var head):
            let requestKeeps = (keepsConnection.first ?? true) && !answersBeforeALargeBody
            endsAfterResponse = !requestKeeps
                || head.headers[canonicalForm: "connection"].contains { $0.lowercased() == "close" }
            if !requestKeeps {
                head.headers.replaceOrAdd(name: "Connection", value: "close")
                context.write(wrapOutboundOut(.head(head)), promise: promise)
                return
            }
            context.write(data, promise: promise)
        case .end where endsAfterResponse:
            // Closed once the response is written: a close with writes pending would fail them.
            let channel = context.channel
            let written = context.eventLoop.makePromise(of: Void.self)
            written.futureResult.whenComplete { _ in channel.close(promise: nil) }
            written.futureResult.cascade(to: promise)
            context.writeAndFlush(data, promise: written)
        case .end:
            if !keepsConnection.isEmpty { keepsConnection.removeFirst() }
            context.write(data, promise: promise)
        case .body:
            context.write(data, promise: promise)
        }
    }

    /// Puts a `ConnectionPersistence` before the HTTP/1 → HTTP types codec, and steps out: the server adds the
    /// application's handlers after that codec, where HTTP/1's version is already gone.
    final class Installer: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = NIOAny

        func handlerAdded(context: ChannelHandlerContext) {
            let pipeline = context.pipeline.syncOperations
            do {
                let codec = try pipeline.handler(type: HTTP1ToHTTPServerCodec.self)
                try pipeline.addHandler(ConnectionPersistence(), position: .before(codec))
            } catch {
                context.fireErrorCaught(error)
            }
            pipeline.removeHandler(context: context, promise: nil)
        }
    }
}
