import Foundation

/// The machine's PostgreSQL server programs, and how to run them (as another user when we are root).
struct PostgresBinaries {
    let directory: URL

    /// `pg_ctl` on PATH, else the newest `/usr/lib/postgresql/<version>/bin`.
    static func locate(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> PostgresBinaries {
        let fileManager = FileManager.default
        let onPath = (environment["PATH"] ?? "").split(separator: ":").map { URL(fileURLWithPath: String($0)) }
        for directory in onPath where fileManager.isExecutableFile(atPath: directory.appendingPathComponent("pg_ctl").path)
            && fileManager.isExecutableFile(atPath: directory.appendingPathComponent("initdb").path) {
            return PostgresBinaries(directory: directory)
        }
        let root = URL(fileURLWithPath: "/usr/lib/postgresql")
        let versions = ((try? fileManager.contentsOfDirectory(atPath: root.path)) ?? [])
            .compactMap(Int.init).sorted(by: >)
        for version in versions {
            let directory = root.appendingPathComponent("\(version)/bin")
            if fileManager.isExecutableFile(atPath: directory.appendingPathComponent("pg_ctl").path) {
                return PostgresBinaries(directory: directory)
            }
        }
        throw EmbeddedPostgresError.notInstalled
    }

    /// Runs a PostgreSQL program (or any program on PATH, for `test`), optionally as `user`; returns its exit
    /// status and combined output.
    func run(_ program: String, _ arguments: [String], as user: String?) throws -> (status: Int32, output: String) {
        let candidate = directory.appendingPathComponent(program).path
        let executable = FileManager.default.isExecutableFile(atPath: candidate) ? candidate : "/usr/bin/env"
        let commandLine = [executable] + (executable == candidate ? [] : [program]) + arguments
        let argv = user.map { ["/usr/sbin/runuser", "-u", $0, "--"] + commandLine } ?? commandLine
        // From /, which every user may enter: the server must not start in a directory its user cannot read.
        return try ChildProcess.run(["/usr/bin/env", "-C", "/"] + argv)
    }

    func chown(_ directory: URL, to user: String) throws {
        let result = try ChildProcess.run(["/bin/chown", user, directory.path])
        guard result.status == 0 else { throw EmbeddedPostgresError.commandFailed("chown \(user) \(directory.path)", result.output) }
    }
}
