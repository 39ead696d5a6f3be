import Foundation

extension EmbeddedPostgres {
    /// A physical streaming standby of this running cluster, in `directory`: `pg_basebackup -R -X stream` over the
    /// private socket (the embedded cluster trusts local replication connections), then started read-only on a
    /// socket of its own. What the tests use to prove what the ledger does on a replica; an operator trying
    /// replicas on one machine may use it too.
    public func startStandby(in directory: URL) throws -> EmbeddedPostgres {
        let standby = EmbeddedPostgres(dataDirectory: directory)
        let binaries = try PostgresBinaries.locate()
        for folder in [standby.dataDirectory, standby.socketDirectory] {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            if let owner { try binaries.chown(folder, to: owner) }
        }
        let backup = try binaries.run(
            "pg_basebackup",
            ["-D", standby.clusterDirectory.path, "-h", socketDirectory.path, "-U", Self.superuser, "-R", "-X", "stream", "-c", "fast"],
            as: owner)
        guard backup.status == 0 else { throw EmbeddedPostgresError.commandFailed("pg_basebackup", backup.output) }
        // The copied configuration names the primary's socket directory; a later setting overrides an earlier one.
        // Feedback keeps the primary from vacuuming rows a long read on the standby still needs.
        let handle = try FileHandle(forWritingTo: standby.clusterDirectory.appendingPathComponent("postgresql.conf"))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data("""

            # A streaming standby of \(clusterDirectory.path) (EmbeddedPostgres.startStandby).
            unix_socket_directories = '\(standby.socketDirectory.path)'
            hot_standby = on
            hot_standby_feedback = on

            """.utf8))
        try handle.close()
        try standby.start()
        return standby
    }

    /// Promotes this standby to a primary (`pg_ctl promote`), waiting until it takes writes: what a failover does.
    public func promote() throws {
        let promoted = try PostgresBinaries.locate().run("pg_ctl", ["-D", clusterDirectory.path, "-w", "-t", "60", "-s", "promote"], as: owner)
        guard promoted.status == 0 else { throw EmbeddedPostgresError.commandFailed("pg_ctl promote", promoted.output) }
    }
}
