import LedgerPostgres
import Logging
import NIOCore
import NIOHTTP1

/// The front of each connection's pipeline, right after the HTTP/1 parser, where every request and answer of the
/// connection passes: it keeps the connection's idle timeout and graceful shutdown (`ConnectionIdleState`), and it is
/// the connection's door to the `HistoryLane` when there is one. Hummingbird's connection state handler, which did
/// the first, is taken out (`ConnectionsOnTheirLoops`): it sits after the codec to HTTP types, behind the lane, where
/// the lane's requests do not pass, and it closed a keep-alive connection answered only by the lane as idle.
///
/// The lane answers here, before the codec to HTTP types, the handlers after it, the async channel and the router:
/// after the codec, each part of a read went through five more handlers each way and two conversions (6.5 % of a
/// read's CPU, BENCHMARKS.md, stop 55). A request the lane may answer is held; the lane's answer is written from here,
/// or, when it has none, the request is passed on to the router as it came. The lane takes only HTTP/1.1 requests
/// that keep their connection: one that ends it is the router's, whose `ConnectionPersistence` closes the connection
/// after the answer.
///
/// Answers leave in the order their requests came (HTTP/1.1 pipelining): the lane takes a request only when the
/// router owes no answer on the connection, and while it answers one, whatever else arrives waits here, in order: a
/// part the parser could not read too, so that its 400 (`UnreadableRequestResponder`) follows the lane's answer, and
/// the end of the input. Once something waits, no more is read from the socket until the answer is written. Until
/// then the socket stays read: a client that waits for its answer, as nearly every one does, sends nothing meanwhile,
/// and holding the read made NIO drop the socket's read interest and take it again (two `epoll_ctl` calls) on every
/// lane answer.
final class ConnectionFront: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private enum State {
        /// Parts pass to the router.
        case passing
        /// The lane took this request's head and waits for its end.
        case holding(HTTPRequestHead, orderId: String)
        /// The lane is answering; what arrives meanwhile waits in `waiting`.
        case answering
    }

    private let lane: HistoryLane?
    private let logger: Logger
    private var idle: ConnectionIdleState
    private var idleCheck: Scheduled<Void>?
    private var state = State.passing
    /// Requests passed to the router whose answers have not ended yet.
    private var routed = 0
    private var waiting: [Arrival] = []
    /// The channel asked for more bytes while the lane was answering with something waiting: asked for once it has.
    private var readPending = false
    /// A part or error was passed on since the last read-complete passed on: the handlers after this one need the
    /// next read-complete only then (the async channel hands what it got to the router on it).
    private var passedSinceReadComplete = false

    init(idleTimeout: TimeAmount?, lane: HistoryLane?, logger: Logger) {
        self.idle = ConnectionIdleState(idleTimeout: idleTimeout)
        self.lane = lane
        self.logger = logger
    }

    /// What arrived while the lane was answering.
    private enum Arrival {
        case part(HTTPServerRequestPart)
        case error(any Error)
        /// An inbound event: the end of the input, from a client that half-closes after its request, must reach the
        /// router after the lane's answer, or the router would end the connection before that answer is written.
        case event(Any)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        idle.read(part)
        if isAnswering {
            waiting.append(.part(part))
        } else {
            take(part, context: context)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if isAnswering {
            waiting.append(.error(error))
        } else {
            passedSinceReadComplete = true
            context.fireErrorCaught(error)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        passReadComplete(context: context)
    }

    private func passReadComplete(context: ChannelHandlerContext) {
        guard passedSinceReadComplete else { return }
        passedSinceReadComplete = false
        context.fireChannelReadComplete()
    }

    private func pass(_ part: HTTPServerRequestPart, context: ChannelHandlerContext) {
        passedSinceReadComplete = true
        context.fireChannelRead(wrapInboundOut(part))
    }

    private func take(_ part: HTTPServerRequestPart, context: ChannelHandlerContext) {
        switch (state, part) {
        case (.passing, .head(let head)):
            if routed == 0, lane != nil, head.version == .http1_1, head.isKeepAlive, let orderId = HistoryLane.orderId(of: head) {
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
            pass(part, context: context)
        default:
            pass(part, context: context)
        }
    }

    private func route(_ part: HTTPServerRequestPart, context: ChannelHandlerContext) {
        if case .head = part { routed += 1 }
        pass(part, context: context)
    }

    private func answer(_ head: HTTPRequestHead, orderId: String, context: ChannelHandlerContext) {
        state = .answering
        let (lane, logger, loop) = (self.lane, self.logger, context.eventLoop)
        let handler = NIOLoopBound((self, context), eventLoop: loop)
        Task(executorPreference: EventLoopExecutor(loop)) {
            let answer = await lane?.answer(head, orderId: orderId, logger: logger)
            let finish: @Sendable () -> Void = {
                let (handler, context) = handler.value
                handler.finish(head, answer, context: context)
            }
            // The task runs on the connection's loop (its executor preference): no hop back to it.
            if loop.inEventLoop { finish() } else { loop.execute(finish) }
        }
    }

    private func finish(_ head: HTTPRequestHead, _ answer: HistoryLane.Answer?, context: ChannelHandlerContext) {
        state = .passing
        // The client went away meanwhile: nothing to answer, nothing of its to pass on.
        guard context.channel.isActive else {
            waiting.removeAll()
            return
        }
        if let answer {
            context.write(wrapOutboundOut(.head(answer.head)), promise: nil)
            if let body = answer.body { context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil) }
            endAnswer(wrapOutboundOut(.end(nil)), promise: nil, flush: true, context: context)
        } else {
            route(.head(head), context: context)
            pass(.end(nil), context: context)
        }
        while !isAnswering, !waiting.isEmpty {
            switch waiting.removeFirst() {
            case .part(let part): take(part, context: context)
            case .error(let error): errorCaught(context: context, error: error)
            case .event(let event): userInboundEventTriggered(context: context, event: event)
            }
        }
        passReadComplete(context: context)
        if !isAnswering, readPending {
            readPending = false
            context.read()
        }
    }

    private var isAnswering: Bool {
        if case .answering = state { true } else { false }
    }

    func read(context: ChannelHandlerContext) {
        if isAnswering, !waiting.isEmpty {
            readPending = true
        } else {
            context.read()
        }
    }

    /// The router's answers pass here; the lane's are written from here, and are counted where they are.
    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .end = unwrapOutboundIn(data) else {
            context.write(data, promise: promise)
            return
        }
        if routed > 0 { routed -= 1 }
        endAnswer(data, promise: promise, flush: false, context: context)
    }

    /// Writes an answer's end, the router's (flushed by it) or the lane's (`flush`). The last answer owed after a
    /// graceful shutdown was asked for closes the connection once it is written (a close with writes pending would
    /// fail them); otherwise, with nothing more being answered, the idle time counts from now.
    private func endAnswer(_ end: NIOAny, promise: EventLoopPromise<Void>?, flush: Bool, context: ChannelHandlerContext) {
        let after = idle.answered()
        if after == .close {
            let channel = context.channel
            let written = context.eventLoop.makePromise(of: Void.self)
            written.futureResult.whenComplete { _ in channel.close(promise: nil) }
            written.futureResult.cascade(to: promise)
            context.writeAndFlush(end, promise: written)
            return
        }
        if after == .idleFromNow { checkIdle(context, in: idle.idleTimeout) }
        if flush { context.writeAndFlush(end, promise: promise) } else { context.write(end, promise: promise) }
    }

    // MARK: the idle timeout and graceful shutdown

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { checkIdle(context, in: idle.idleTimeout) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        idleCheck?.cancel()
        idleCheck = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        checkIdle(context, in: idle.idleTimeout)
        context.fireChannelActive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard event is ChannelShouldQuiesceEvent else {
            if isAnswering { waiting.append(.event(event)) } else { context.fireUserInboundEventTriggered(event) }
            return
        }
        if idle.quiesce() { context.close(promise: nil) }
    }

    /// One check scheduled at a time: the one scheduled looks at the last activity when it is due, and schedules the
    /// next.
    private func checkIdle(_ context: ChannelHandlerContext, in delay: TimeAmount?) {
        guard let delay, idleCheck == nil else { return }
        idleCheck = context.eventLoop.assumeIsolated().scheduleTask(in: delay) { [self] in
            idleCheck = nil
            guard context.channel.isActive else { return }
            switch idle.check() {
            case .close: context.close(promise: nil)
            case .checkAgain(let delay): checkIdle(context, in: delay)
            case .wait: break
            }
        }
    }
}
