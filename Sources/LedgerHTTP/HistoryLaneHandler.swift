import HTTPTypes
import LedgerPostgres
import Logging
import NIOCore
import NIOHTTPTypes

/// A connection's door to the `HistoryLane`: it sits at the end of the pipeline, after Hummingbird's connection
/// state handler (which so still sees every request and answer: idle timeout, graceful shutdown) and before the async
/// channel that feeds the router. A request the lane may answer is held; the lane's answer is written from here, or,
/// when it has none, the request is passed on to the router as it came.
///
/// Answers leave in the order their requests came (HTTP/1.1 pipelining): the lane takes a request only when the
/// router owes no answer on the connection, and while it answers one, whatever else arrives waits here, in order,
/// and no more is read from the socket.
final class HistoryLaneHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private enum State {
        /// Parts pass to the router.
        case passing
        /// The lane took this request's head and waits for its end.
        case holding(HTTPRequest, orderId: String)
        /// The lane is answering; what arrives meanwhile waits in `waiting`.
        case answering
    }

    private let lane: HistoryLane
    private let logger: Logger
    private var state = State.passing
    /// Requests passed to the router whose answers have not ended yet.
    private var routed = 0
    private var waiting: [HTTPRequestPart] = []
    /// The channel asked for more bytes while the lane was answering: asked for once it has.
    private var readPending = false

    init(lane: HistoryLane, logger: Logger) {
        self.lane = lane
        self.logger = logger
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        if isAnswering {
            waiting.append(part)
        } else {
            take(part, context: context)
        }
    }

    private func take(_ part: HTTPRequestPart, context: ChannelHandlerContext) {
        switch (state, part) {
        case (.passing, .head(let head)):
            if routed == 0, let orderId = HistoryLane.orderId(of: head) {
                state = .holding(head, orderId: orderId)
            } else {
                route(part, context: context)
            }
        case (.holding(let head, let orderId), .end):
            answer(head, orderId: orderId, context: context)
        case (.holding(let head, _), _):
            // A GET with a body is the router's.
            state = .passing
            route(.head(head), context: context)
            context.fireChannelRead(wrapInboundOut(part))
        default:
            context.fireChannelRead(wrapInboundOut(part))
        }
    }

    private func route(_ part: HTTPRequestPart, context: ChannelHandlerContext) {
        if case .head = part { routed += 1 }
        context.fireChannelRead(wrapInboundOut(part))
    }

    private func answer(_ head: HTTPRequest, orderId: String, context: ChannelHandlerContext) {
        state = .answering
        let (lane, logger, loop) = (self.lane, self.logger, context.eventLoop)
        let handler = NIOLoopBound((self, context), eventLoop: loop)
        Task(executorPreference: EventLoopExecutor(loop)) {
            let answer = await lane.answer(head, orderId: orderId, logger: logger)
            let finish: @Sendable () -> Void = {
                let (handler, context) = handler.value
                handler.finish(head, answer, context: context)
            }
            // The task runs on the connection's loop (its executor preference): no hop back to it.
            if loop.inEventLoop { finish() } else { loop.execute(finish) }
        }
    }

    private func finish(_ head: HTTPRequest, _ answer: HistoryLane.Answer?, context: ChannelHandlerContext) {
        state = .passing
        // The client went away meanwhile: nothing to answer, nothing of its to pass on.
        guard context.channel.isActive else {
            waiting.removeAll()
            return
        }
        if let answer {
            context.write(wrapOutboundOut(.head(answer.head)), promise: nil)
            if let body = answer.body { context.write(wrapOutboundOut(.body(body)), promise: nil) }
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        } else {
            route(.head(head), context: context)
            context.fireChannelRead(wrapInboundOut(.end(nil)))
        }
        while !isAnswering, !waiting.isEmpty {
            take(waiting.removeFirst(), context: context)
        }
        context.fireChannelReadComplete()
        if !isAnswering, readPending {
            readPending = false
            context.read()
        }
    }

    private var isAnswering: Bool {
        if case .answering = state { true } else { false }
    }

    func read(context: ChannelHandlerContext) {
        if isAnswering {
            readPending = true
        } else {
            context.read()
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data), routed > 0 { routed -= 1 }
        context.write(data, promise: promise)
    }
}
