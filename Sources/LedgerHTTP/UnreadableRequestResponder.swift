import HTTPTypes
import LedgerCore
import NIOCore
import NIOHTTP1
import NIOHTTPTypes

/// Answers a request the HTTP parser cannot read — a control byte in a header value, a broken request line — with
/// the API's JSON `400 invalid_request`, where the server would send a bare 400 with no body: every answer of the API
/// has the documented shape. It sits right after the HTTP codec, and steps aside while a request is being answered:
/// an error in the middle of a body is the application's to report.
final class UnreadableRequestResponder: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    /// From a request's head to its response's end.
    private var answering = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head = unwrapInboundIn(data) { answering = true }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { answering = false }
        context.write(data, promise: promise)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard error is HTTPParserError, !answering else {
            context.fireErrorCaught(error)
            return
        }
        let body = APIError.invalidRequest(
            field: "request", "the request could not be parsed as HTTP/1.1 (a control character in a header, a malformed "
                + "request line or header)"
        ).body.canonicalJSON
        let head = HTTPResponse(status: .badRequest, headerFields: [
            .contentType: "application/json", .contentLength: String(body.utf8.count), .connection: "close",
        ])
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(context.channel.allocator.buffer(string: body))), promise: nil)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }
}
