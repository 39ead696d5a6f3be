import ArgumentParser
import Foundation
import Synchronization

/// Every command's standard output. Written with write(2) and buffered here (a page at a time, flushed at the end
/// and by `announce`), so that a reader that went away — `ledger export | head`, a `less` quit early — ends the
/// command quietly: `OutputClosed`, exit status 141 as other Unix tools, where Foundation's `FileHandle.write`
/// trapped on the broken pipe.
enum StandardOutput {
    private static let buffer = Mutex<[UInt8]>([])
    private static let pageSize = 64 * 1024

    /// `text` and a line end (`terminator`).
    static func line(_ text: String = "", terminator: String = "\n") throws {
        try write(text + terminator)
    }

    static func write(_ text: String) throws {
        let full = buffer.withLock { buffer in
            buffer.append(contentsOf: text.utf8)
            return buffer.count >= pageSize
        }
        if full { try flush() }
    }

    static func flush() throws {
        let bytes = buffer.withLock { buffer in
            defer { buffer.removeAll(keepingCapacity: true) }
            return buffer
        }
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.write(STDOUT_FILENO, $0.baseAddress, $0.count) }
            if written >= 0 {
                offset += written
            } else if errno == EPIPE {
                throw OutputClosed()
            } else if errno != EINTR {
                throw OutputFailed(errno: errno)
            }
        }
    }

    /// The exit status of a command whose reader went away: what a shell reports for a process ended by SIGPIPE.
    static let closedStatus: Int32 = 141
}

/// The reader of standard output went away.
struct OutputClosed: Error {}

struct OutputFailed: Error, CustomStringConvertible {
    let errno: Int32
    var description: String { "cannot write to standard output: \(String(cString: strerror(errno)))" }
}

