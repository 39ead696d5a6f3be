import NIOCore
import NIOHTTPTypes

/// A request's body must arrive within `timeout` (`serve --body-timeout`): one sent a byte at a time kept its
/// connection, since every byte read counts as activity for the idle timeout. When it is late, the body's reader fails
/// with `RequestBodyTooSlow` (`RequestBodyReader` answers 408 and the connection is closed).
///
/// A timer on the connection's own event loop, armed only when a read ends with a request's body still incomplete: a
/// body that comes with its head, as almost every one does, costs no timer. (It was a sleeping task raced against the
/// read in a task group: two tasks and a timer on another thread for every request with a body, 5–8 % of an append's
/// CPU.) The time counts from the end of the read that brought the head.
final class RequestBodyDeadline: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart

    private let timeout: Duration
    /// From a request's head to its end.
    private var receiving = false
    private var timer: Scheduled<Void>?

    init(timeout: Duration) {
        self.timeout = timeout
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head: receiving = true
        case .end: stop()
        case .body: break
        }
        context.fireChannelRead(data)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if receiving, timer == nil {
            let timeout = self.timeout
            timer = context.eventLoop.assumeIsolated().scheduleTask(in: TimeAmount(timeout)) { [self] in
                timer = nil
                receiving = false
                context.fireErrorCaught(RequestBodyTooSlow(timeout: timeout))
            }
        }
        context.fireChannelReadComplete()
    }

    func channelInactive(context: ChannelHandlerContext) {
        stop()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        stop()
    }

    private func stop() {
        receiving = false
        timer?.cancel()
        timer = nil
    }
}

/// The body did not arrive within the time `serve --body-timeout` gives it.
struct RequestBodyTooSlow: Error {
    let timeout: Duration
}
