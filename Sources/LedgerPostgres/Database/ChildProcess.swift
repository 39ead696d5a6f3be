import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs a program to completion with posix_spawn and waitpid.
///
/// Not Foundation's `Process`: on Linux its `waitUntilExit` spins the calling thread's run loop, which never
/// returns when called from the main thread of an async `main` (the main queue is busy running us). Output goes to
/// a temporary file rather than a pipe, because the server `pg_ctl` starts inherits the descriptor and would keep a
/// pipe open forever. Standard input is /dev/null so nothing waits on a terminal.
enum ChildProcess {
    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), which Swift's Glibc module does not
    /// declare: looked up by name; nil where the C library has none.
    private static let closeFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
        #if canImport(Glibc)
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else {
            return nil
        }
        return unsafeBitCast(
            symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
        #else
        return nil
        #endif
    }()

    static func run(_ argv: [String]) throws -> (status: Int32, output: String) {
        let outputPath = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-\(UUID().uuidString).out").path
        defer { unlink(outputPath) }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // Nothing else of ours: a descriptor without close-on-exec (NIO's sockets among them) would be the server's
        // too. A test process with hundreds of sessions open left a standby it restarted 35 descriptors short of
        // the 58 PostgreSQL needs to start ("insufficient file descriptors available to start server process").
        _ = closeFrom?(&actions, 3)

        var cArguments = argv.map { strdup($0) } + [nil]
        defer { cArguments.forEach { free($0) } }
        var pid = pid_t()
        let spawned = posix_spawn(&pid, argv[0], &actions, nil, &cArguments, environ)
        guard spawned == 0 else {
            throw EmbeddedPostgresError.commandFailed(argv.joined(separator: " "), String(cString: strerror(spawned)))
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 {
            guard errno == EINTR else {
                throw EmbeddedPostgresError.commandFailed(argv.joined(separator: " "), String(cString: strerror(errno)))
            }
        }
        let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        // Exit status as a shell reports it: the code, or 128 + the signal that killed the program.
        let exited = status & 0x7f == 0
        return (exited ? (status >> 8) & 0xff : 128 + (status & 0x7f), output)
    }
}
