import NIOCore
import NIOHTTP1

/// A connection's idle timeout and graceful shutdown, kept by `ConnectionFront`, where every request and answer of
/// the connection passes, those the history lane answers included. It decides what Hummingbird's
/// `HTTPConnectionStateHandler` decides, whose handler `ConnectionFront` replaces: that one sits after the codec to
/// HTTP types, behind the lane, and closed a keep-alive connection answered only by the lane as idle.
///
/// - Idle: a connection is closed once `idleTimeout` has passed since the last request part it read or the last
///   answer it finished, unless a request it has read in full is still being answered. An idle keep-alive, or one
///   that trickles a header a byte at a time, held a file descriptor for good.
/// - Graceful shutdown (`ChannelShouldQuiesceEvent`): closed at once when nothing is being answered, else right
///   after the answers owed.
struct ConnectionIdleState {
    /// nil: idle connections stay open.
    let idleTimeout: TimeAmount?
    /// Requests whose head was read and whose answer has not ended.
    private var inProgress = 0
    /// Between a request's head and its end.
    private var readingRequest = false
    private var lastActive = NIODeadline.now()
    private var closeAfterAnswers = false

    init(idleTimeout: TimeAmount?) {
        self.idleTimeout = idleTimeout
    }

    mutating func read(_ part: HTTPServerRequestPart) {
        lastActive = .now()
        switch part {
        case .head:
            readingRequest = true
            inProgress += 1
        case .body: break
        case .end: readingRequest = false
        }
    }

    enum AfterAnswer: Equatable {
        /// The last answer owed after a graceful shutdown was asked for: close once it is written.
        case close
        /// Nothing more is being answered: the idle time counts from now.
        case idleFromNow
        case nothing
    }

    /// An answer ended.
    mutating func answered() -> AfterAnswer {
        inProgress = max(0, inProgress - 1)
        guard inProgress == 0 else { return .nothing }
        if closeAfterAnswers { return .close }
        lastActive = .now()
        return .idleFromNow
    }

    /// A graceful shutdown was asked for: whether to close now.
    mutating func quiesce() -> Bool {
        if inProgress > 0 { closeAfterAnswers = true }
        return inProgress == 0
    }

    enum IdleCheck: Equatable {
        case close
        case checkAgain(in: TimeAmount)
        /// A request read in full is being answered: its answer's end starts the idle time again.
        case wait
    }

    /// The idle check that was due.
    func check() -> IdleCheck {
        guard let idleTimeout else { return .wait }
        if !readingRequest, inProgress > 0 { return .wait }
        let idleUntil = lastActive + idleTimeout
        let now = NIODeadline.now()
        return idleUntil <= now ? .close : .checkAgain(in: idleUntil - now)
    }
}
