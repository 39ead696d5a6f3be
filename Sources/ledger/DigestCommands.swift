import ArgumentParser
import Foundation
import LedgerHTTP
import LedgerPostgres

/// `ledger seal`: folds the events recorded since the last checkpoint into the ledger digest and stores it.
struct SealCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "seal", abstract: "Checkpoint the ledger digest now (serve also does this in the background).")

    @Flag(help: "Print the checkpoint as GET /v1/ledger/digest does (null when there is nothing to seal).") var json = false
    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        let checkpoint = try await database.withLedger { opened in try await opened.operations.sealNow() }
        if json { return try StandardOutput.line(checkpoint.map(\.json.canonicalJSON) ?? "null") }
        try StandardOutput.line(checkpoint.map(\.pinned) ?? "the ledger has no events to seal")
    }
}

/// `ledger digest`: a checkpoint of the ledger as it is now, to save and later pass to `ledger verify --digest`.
/// It seals first (the background sealer may not have run since the last events), unless the role may not write
/// checkpoints; then it prints the latest one and says how to get a newer one.
struct DigestCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "digest", abstract: "Seal the ledger now and print its digest checkpoint (DIGEST@POSITION).")

    @Flag(help: "Print the same JSON as GET /v1/ledger/digest.") var json = false
    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        let (checkpoint, sealed) = try await database.withLedger { opened in
            try await opened.operations.sealIfPermitted()
        }
        if !sealed {
            try? FileHandle.standardError.write(contentsOf: Data("""
                this role may not seal the ledger: the latest stored checkpoint follows, which may not cover the newest \
                events. Run `ledger seal` as the database's owner or as ledger_service (serve seals every --seal-interval seconds).

                """.utf8))
        }
        guard let checkpoint else {
            throw CommandFailure("no digest yet: the ledger has no events, or this role may not seal it (run `ledger seal` as its owner)")
        }
        try StandardOutput.line(json ? checkpoint.json.canonicalJSON : checkpoint.pinned)
    }
}
