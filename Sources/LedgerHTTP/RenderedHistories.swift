import Foundation
import HTTPTypes
import NIOCore
import Synchronization

/// History pages as rendered once. An event log never changes and a new event only ever takes a higher version, so
/// the answer to one history request (order, `asOf`, `after`, `limit`) rendered at stream version V is the answer
/// again for as long as the stream stays at V. A request for a page rendered before asks the database one small
/// question — the stream's version, which also confirms a cached token (`Ledger.streamVersion`) — and is answered
/// with the bytes already rendered: no events read, no fold, no JSON built.
///
/// The version is also the page's `ETag`; a client that sends it back (`If-None-Match`) gets `304 Not Modified` while
/// it still holds. Bounded: the oldest page rendered is forgotten first (`capacity` pages, a few KiB each).
final class RenderedHistories: Sendable {
    struct Key: Hashable, Sendable {
        let orderId: String
        let asOf: Date?
        let after: Int
        let limit: Int
    }

    struct Page: Sendable {
        let version: Int
        let body: ByteBuffer
    }

    private struct Pages {
        var byKey: [Key: Page] = [:]
        /// Keys in the order they were rendered, a ring: the slot `next` holds the oldest.
        var ring: [Key?]
        var next = 0
    }

    private let pages: Mutex<Pages>

    init(capacity: Int = 4096) {
        pages = Mutex(Pages(ring: Array(repeating: nil, count: max(1, capacity))))
    }

    func page(_ key: Key) -> Page? {
        pages.withLock { $0.byKey[key] }
    }

    func keep(_ key: Key, _ page: Page) {
        pages.withLock { pages in
            if pages.byKey.updateValue(page, forKey: key) != nil { return }
            if let oldest = pages.ring[pages.next] { pages.byKey.removeValue(forKey: oldest) }
            pages.ring[pages.next] = key
            pages.next = (pages.next + 1) % pages.ring.count
        }
    }

    /// The `ETag` of a page rendered at `version`.
    static func etag(_ version: Int) -> String { "\"h\(version)\"" }

    /// The version an `If-None-Match` names, when it is one of ours (a single tag).
    static func version(inIfNoneMatch header: String?) -> Int? {
        guard let header, header.hasPrefix("\"h"), header.hasSuffix("\""), header.count > 3 else { return nil }
        return Int(header.dropFirst(2).dropLast())
    }
}
