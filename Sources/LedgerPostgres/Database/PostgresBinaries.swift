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
        let commandLine = (executable == candidate ? [] : [program]) + arguments
        let process = Process()
        if let user {
            process.executableURL = URL(fileURLWithPath: "/usr/sbin/runuser")
            process.arguments = ["-u", user, "--", executable] + commandLine
        } else {
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = commandLine
        }
        // The server inherits nothing of ours; a closed stdin keeps pg_ctl from waiting on a terminal.
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        process.currentDirectoryURL = URL(fileURLWithPath: "/")
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    func chown(_ directory: URL, to user: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/chown")
        process.arguments = [user, directory.path]
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw EmbeddedPostgresError.commandFailed("chown \(user) \(directory.path)", "exit \(process.terminationStatus)")
        }
    }
}
