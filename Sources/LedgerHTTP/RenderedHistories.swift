import Foundation
import HTTPTypes
import LedgerPostgres
import NIOCore
import Synchronization

/// History pages as rendered once. An event log never changes and a new event only ever takes a higher version, so
/// the answer to one history request (order, `asOf`, `after`, `limit`) rendered at stream version V is the answer
/// again for as long as the stream stays at V. A request for a page rendered before asks the database one small
/// question — the stream's version, which also confirms a cached token (`Ledger.streamVersion`, read together with
/// the other requests' meanwhile) — and is answered with the bytes already rendered: no events read, no fold, no JSON
/// built.
///
/// The version is also the page's `ETag`; a client that sends it back (`If-None-Match`) gets `304 Not Modified` while
/// it still holds. Bounded: past `budget` bytes (32 MiB: some 8,000 pages of a six-event story), the oldest page
/// rendered is forgotten first.
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
        /// Keys in the order they were rendered, oldest first from `head`.
        var rendered: [Key] = []
        var head = 0
        var bytes = 0
    }

    private let pages = Mutex(Pages())
    /// The most bytes of rendered pages kept: the oldest rendered is forgotten first.
    let budget: Int

    init(budget: Int = 32 << 20) {
        self.budget = budget
    }

    func page(_ key: Key) -> Page? {
        pages.withLock { $0.byKey[key] }
    }

    func keep(_ key: Key, _ page: Page) {
        pages.withLock { pages in
            if let replaced = pages.byKey.updateValue(page, forKey: key) {
                pages.bytes += page.body.readableBytes - replaced.body.readableBytes
                return
            }
            pages.rendered.append(key)
            pages.bytes += page.body.readableBytes
            while pages.bytes > budget, pages.head < pages.rendered.count {
                if let oldest = pages.byKey.removeValue(forKey: pages.rendered[pages.head]) {
                    pages.bytes -= oldest.body.readableBytes
                }
                pages.head += 1
            }
            // The forgotten keys' slots are given back once they are half the list.
            if pages.head > 1024, pages.head * 2 > pages.rendered.count {
                pages.rendered.removeFirst(pages.head)
                pages.head = 0
            }
        }
    }

    /// The `ETag` of a page rendered at `version`.
    static func etag(_ version: Int) -> String { "\"h\(version)\"" }

    /// What a page rendered before, or one the client holds (`If-None-Match`), answers while the order's stream is
    /// still at its version.
    enum Answer {
        case notModified(etag: String)
        case page(ByteBuffer, etag: String)
    }

    /// The answer to `key` without reading the page again, when there is one: the stream's version (which also
    /// confirms a cached token) says whether what was rendered, or what the client holds, is still the answer. Nil
    /// when the page must be read. The route and the history lane (`HistoryLane`) both answer by it.
    func answer(to key: Key, holding held: String?, on ledger: Ledger) async throws -> Answer? {
        let rendered = page(key)
        guard held != nil || rendered != nil, let current = try await ledger.streamVersion(key.orderId) else { return nil }
        let etag = Self.etag(current)
        if EntityTags.matches(held, etag) { return .notModified(etag: etag) }
        if let rendered, rendered.version == current { return .page(rendered.body, etag: etag) }
        return nil
    }
}
