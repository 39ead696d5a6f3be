import Foundation
import LedgerPostgres

/// One `serve` per data directory. A second `serve` on the same embedded cluster used to start silently, and when
/// the first stopped it stopped the cluster under the second, which then answered 503 with no reason in its log.
/// The lock is an flock on `serve.lock` in the data directory: held while the process lives, released by the system
/// when it ends however it ends (a `kill -9` included), so a cluster left running by a killed `serve` is adopted by
/// the next one, which says so and stops it when it stops.
struct ServeLock {
    let directory: URL

    /// Nil when serve uses a database URL (the operator runs that database).
    static func acquire(url: String?, environment: [String: String] = ProcessInfo.processInfo.environment) throws -> ServeLock? {
        if let url = url ?? environment["DATABASE_URL"], !url.isEmpty { return nil }
        let directory = EmbeddedPostgres.defaultDataDirectory(environment: environment)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("serve.lock").path
        let descriptor = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw ServeLockError.unusable(path: path, errno: errno) }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let holder = (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
            close(descriptor)
            throw ServeLockError.held(directory: directory.path, pid: holder ?? "?")
        }
        // Kept open, and so locked, until the process ends.
        let pid = Array("\(getpid())\n".utf8)
        _ = ftruncate(descriptor, 0)
        _ = pid.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
        return ServeLock(directory: directory)
    }
}

enum ServeLockError: Error, CustomStringConvertible {
    case held(directory: String, pid: String)
    case unusable(path: String, errno: Int32)

    var description: String {
        switch self {
        case .held(let directory, let pid):
            "another ledger serve (pid \(pid)) is using the embedded database in \(directory); stop it first, or give "
                + "this one its own LEDGER_DATA_DIR"
        case .unusable(let path, let errno):
            "cannot open \(path): \(String(cString: strerror(errno)))"
        }
    }
}
