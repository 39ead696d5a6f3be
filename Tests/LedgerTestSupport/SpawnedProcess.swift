import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A child process started with `posix_spawn`, with the part of Foundation's `Process` the tests use. Not `Process`:
/// on Linux, Swift 6.3.1's `Process.run()` reads `/proc/self/fd` with a struct copy of each `dirent`'s 256-byte name,
/// which reads past glibc's buffer and crashes the test process now and then (swift-corelibs-foundation#5472; seen
/// once in CI, a signal 11 in `memmove` under `Process.run`). Like `Process`, the child gets a process group of its
/// own and none of our descriptors but its standard input, output and error.
public final class SpawnedProcess: @unchecked Sendable {
    public var executableURL: URL?
    public var arguments: [String] = []
    public var environment: [String: String]?
    /// A `FileHandle` or a `Pipe` (its writing end) each; nil: inherited.
    public var standardInput: Any?
    public var standardOutput: Any?
    public var standardError: Any?

    private let lock = NSLock()
    private var pid: pid_t = 0
    private var status: Int32?
    private var handler: (@Sendable (SpawnedProcess) -> Void)?

    public init() {}

    public var processIdentifier: Int32 { lock.withLock { pid } }
    public var isRunning: Bool { lock.withLock { pid != 0 && status == nil } }

    /// Called once, when the process has exited (on a thread of its own), if set by then.
    public var terminationHandler: (@Sendable (SpawnedProcess) -> Void)? {
        get { lock.withLock { handler } }
        set { lock.withLock { handler = newValue } }
    }

    /// The exit code, or the signal that ended it (`terminationReason`); 0 before the exit.
    public var terminationStatus: Int32 {
        guard let status = lock.withLock({ status }) else { return 0 }
        return status & 0x7f == 0 ? (status >> 8) & 0xff : status & 0x7f
    }

    public var terminationReason: Process.TerminationReason {
        guard let status = lock.withLock({ status }) else { return .exit }
        return status & 0x7f == 0 ? .exit : .uncaughtSignal
    }

    public func terminate() {
        let pid = processIdentifier
        if pid != 0 { _ = kill(pid, SIGTERM) }
    }

    public struct SpawnFailed: Error, CustomStringConvertible {
        public let executable: String
        public let code: Int32
        public var description: String { "could not start \(executable): \(String(cString: strerror(code)))" }
    }

    public func run() throws {
        let path = executableURL?.path ?? ""
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for (target, given) in [(Int32(0), standardInput), (1, standardOutput), (2, standardError)] {
            switch Self.descriptor(given, reading: target == 0) {
            case nil: break
            // `FileHandle.nullDevice` has no descriptor of its own.
            case Int32(-1)?: posix_spawn_file_actions_addopen(&actions, target, "/dev/null", O_RDWR, 0)
            case let fd?: posix_spawn_file_actions_adddup2(&actions, fd, target)
            }
        }
        _ = Self.closeFrom?(&actions, 3)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))

        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let variables = (environment ?? ProcessInfo.processInfo.environment).map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { variables.forEach { free($0) } }
        var child = pid_t()
        let spawned = posix_spawn(&child, path, &actions, &attributes, argv, variables)
        guard spawned == 0 else { throw SpawnFailed(executable: path, code: spawned) }
        let spawnedChild = child
        lock.withLock { pid = spawnedChild }
        // As `Process` does: the child's end of a pipe is the child's alone, so the parent reads an end of file.
        for (given, reading) in [(standardInput, true), (standardOutput, false), (standardError, false)] {
            guard let pipe = given as? Pipe else { continue }
            try? (reading ? pipe.fileHandleForReading : pipe.fileHandleForWriting).close()
        }
        Thread.detachNewThread { [self] in
            var status: Int32 = 0
            while waitpid(spawnedChild, &status, 0) == -1, errno == EINTR {}
            let handler = lock.withLock {
                self.status = status
                return self.handler
            }
            exited.signal()
            handler?(self)
        }
    }

    private let exited = DispatchSemaphore(value: 0)

    /// Blocks the calling thread until the process has exited.
    public func waitUntilExit() {
        guard processIdentifier != 0 else { return }
        exited.wait()
        exited.signal()
    }

    private static func descriptor(_ given: Any?, reading: Bool) -> Int32? {
        switch given {
        case let handle as FileHandle: handle.fileDescriptor
        case let pipe as Pipe: reading ? pipe.fileHandleForReading.fileDescriptor : pipe.fileHandleForWriting.fileDescriptor
        default: nil
        }
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), which Swift's Glibc module does not declare.
    private static let closeFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else {
            return nil
        }
        return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
    }()
}
