import Foundation

/// A private PostgreSQL cluster in the ledger's data directory: what every command uses when no database URL
/// is given. It listens only on a Unix socket in `<data dir>/run` (mode 0700, no TCP), so only this user (and
/// root) can reach it; inside, trust authentication is enough. When we run as root, the cluster runs as the
/// `postgres` user, because PostgreSQL refuses to run as root.
public struct EmbeddedPostgres: Sendable {
    public let dataDirectory: URL
    /// `max_connections`, written when the cluster is initialised (a cluster that exists keeps its own).
    let maximumConnections: Int
    /// The database the ledger uses inside the cluster.
    public static let databaseName = "ledger"
    public static let superuser = "postgres"

    public init(dataDirectory: URL, maximumConnections: Int = 200) {
        self.dataDirectory = dataDirectory.standardizedFileURL
        self.maximumConnections = maximumConnections
    }

    /// `LEDGER_DATA_DIR`, or `.ledger` in the working directory. Run as root (a container, CI), the cluster runs as
    /// `postgres`, which cannot reach a directory under a private one such as `/root`: then the default is a directory
    /// of its own under `/var/tmp/orderledger`, named after the working directory, so the next start (and every
    /// command run from there) finds the same one. `serve` says which it uses.
    public static func defaultDataDirectory(
        environment: [String: String] = ProcessInfo.processInfo.environment,
        workingDirectory: String = FileManager.default.currentDirectoryPath, asRoot: Bool = geteuid() == 0
    ) -> URL {
        if let path = environment["LEDGER_DATA_DIR"], !path.isEmpty {
            return URL(fileURLWithPath: path, isDirectory: true)
        }
        let working = URL(fileURLWithPath: workingDirectory, isDirectory: true)
        guard asRoot, !reachableByOthers(working) else { return working.appendingPathComponent(".ledger") }
        // FNV-1a: stable from run to run, unlike Swift's hashing.
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in working.standardizedFileURL.path.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        let name = working.lastPathComponent.filter { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }.prefix(32)
        return URL(fileURLWithPath: "/var/tmp/orderledger", isDirectory: true)
            .appendingPathComponent("\(name.isEmpty ? "ledger" : String(name))-\(String(hash, radix: 16).prefix(8))")
    }

    /// Whether every directory from `/` down to `directory` lets other users through (the `x` bit for others).
    static func reachableByOthers(_ directory: URL) -> Bool {
        var path = directory.standardizedFileURL.path
        while true {
            var status = stat()
            if stat(path, &status) == 0, status.st_mode & S_IXOTH == 0 { return false }
            let parent = (path as NSString).deletingLastPathComponent
            if parent == path || parent.isEmpty { return true }
            path = parent
        }
    }

    var clusterDirectory: URL { dataDirectory.appendingPathComponent("pg") }
    public var socketDirectory: URL { dataDirectory.appendingPathComponent("run") }
    var logFile: URL { clusterDirectory.appendingPathComponent("server.log") }
    /// Where clients connect.
    public var socketPath: String { socketDirectory.appendingPathComponent(".s.PGSQL.5432").path }

    /// Whether a cluster was initialised here.
    public var isInitialised: Bool {
        FileManager.default.fileExists(atPath: clusterDirectory.appendingPathComponent("PG_VERSION").path)
    }

    /// Initialises the cluster on first use and starts it unless it is running.
    /// Returns true when this call started it (and so should stop it when done).
    @discardableResult
    public func start() throws -> Bool {
        let binaries = try PostgresBinaries.locate()
        let fileManager = FileManager.default
        try fileManager.createDirectory(at: dataDirectory, withIntermediateDirectories: true)
        if !fileManager.fileExists(atPath: clusterDirectory.appendingPathComponent("PG_VERSION").path) {
            try initialise(with: binaries)
        }
        guard socketPath.utf8.count < 104 else {
            throw EmbeddedPostgresError.pathTooLong(socketPath)
        }
        if try isRunning(with: binaries) { return false }
        let started = try binaries.run(
            "pg_ctl", ["-D", clusterDirectory.path, "-l", logFile.path, "-w", "-t", "60", "-s", "start"], as: owner)
        if started.status != 0 {
            // Another process may have started it at the same moment; that is as good.
            if try isRunning(with: binaries) { return false }
            throw EmbeddedPostgresError.commandFailed("pg_ctl start", started.output + tailOfLog())
        }
        return true
    }

    /// Stops the cluster (fast shutdown: running transactions are rolled back, nothing committed is lost).
    public func stop() throws {
        let binaries = try PostgresBinaries.locate()
        guard try isRunning(with: binaries) else { return }
        let stopped = try binaries.run("pg_ctl", ["-D", clusterDirectory.path, "-m", "fast", "-w", "-s", "stop"], as: owner)
        if stopped.status != 0 { throw EmbeddedPostgresError.commandFailed("pg_ctl stop", stopped.output) }
    }

    public func isRunning() throws -> Bool {
        try isRunning(with: PostgresBinaries.locate())
    }

    private func isRunning(with binaries: PostgresBinaries) throws -> Bool {
        guard FileManager.default.fileExists(atPath: clusterDirectory.appendingPathComponent("postmaster.pid").path) else {
            return false
        }
        return try binaries.run("pg_ctl", ["-D", clusterDirectory.path, "status"], as: owner).status == 0
    }

    /// The OS user the server runs as: ourselves, or `postgres` when we are root.
    var owner: String? { geteuid() == 0 ? Self.superuser : nil }

    private func initialise(with binaries: PostgresBinaries) throws {
        let fileManager = FileManager.default
        for directory in [clusterDirectory, socketDirectory] {
            try fileManager.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            if let owner {
                try binaries.chown(directory, to: owner)
            }
        }
        if let owner, try binaries.run("test", ["-w", clusterDirectory.path], as: owner).status != 0 {
            throw EmbeddedPostgresError.unreachable(dataDirectory.path, user: owner)
        }
        let initdb = try binaries.run(
            "initdb",
            ["-D", clusterDirectory.path, "-U", Self.superuser, "--auth=trust", "-E", "UTF8", "--locale=C", "--no-instructions"],
            as: owner)
        guard initdb.status == 0 else { throw EmbeddedPostgresError.commandFailed("initdb", initdb.output) }
        let settings = """

            # OrderLedger embedded cluster: Unix socket only, private to its owner.
            listen_addresses = ''
            unix_socket_directories = '\(socketDirectory.path)'
            unix_socket_permissions = 0700
            port = 5432
            max_connections = \(maximumConnections)
            # Durability is not traded for speed.
            synchronous_commit = on
            fsync = on

            """
        let configuration = clusterDirectory.appendingPathComponent("postgresql.conf")
        let handle = try FileHandle(forWritingTo: configuration)
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(settings.utf8))
        try handle.close()
    }

    private func tailOfLog() -> String {
        guard let log = try? String(contentsOf: logFile, encoding: .utf8) else { return "" }
        return "\n" + log.split(separator: "\n").suffix(10).joined(separator: "\n")
    }
}

/// Why the embedded cluster could not be used, in words an operator can act on.
public enum EmbeddedPostgresError: Error, CustomStringConvertible {
    case notInstalled
    case commandFailed(String, String)
    case unreachable(String, user: String)
    case pathTooLong(String)

    public var description: String {
        switch self {
        case .notInstalled:
            "PostgreSQL server binaries (initdb, pg_ctl) were not found on PATH or in /usr/lib/postgresql/*/bin: "
                + "install the `postgresql` package (apt-get install postgresql), or set DATABASE_URL."
        case .commandFailed(let command, let output):
            "\(command) failed: \(output.trimmingCharacters(in: .whitespacesAndNewlines))"
        case .unreachable(let path, let user):
            "the `\(user)` user cannot write to \(path) (a parent directory is private, e.g. /root): "
                + "set LEDGER_DATA_DIR to a directory it can reach, such as /var/tmp/ledger."
        case .pathTooLong(let path):
            "the socket path \(path) is too long for a Unix socket: set LEDGER_DATA_DIR to a shorter directory."
        }
    }
}
