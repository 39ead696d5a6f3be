import ArgumentParser
import LedgerHTTP
import LedgerPostgres

/// `ledger seal`: folds the events recorded since the last checkpoint into the ledger digest and stores it.
struct SealCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "seal", abstract: "Checkpoint the ledger digest now (serve also does this in the background).")

    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        let checkpoint: DigestCheckpoint? = try await database.withMigratedClient { client in
            let digests = LedgerDigests(client: client)
            if let sealed = try await digests.seal() { return sealed }
            return try await digests.latest()
        }
        print(checkpoint.map(\.pinned) ?? "the ledger has no events to seal")
    }
}

/// `ledger digest`: the latest checkpoint, to save and later pass to `ledger verify --digest`.
struct DigestCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "digest", abstract: "Print the latest ledger digest checkpoint (DIGEST@POSITION).")

    @Flag(help: "Print the same JSON as GET /v1/ledger/digest.") var json = false
    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        guard let checkpoint = try await database.withMigratedClient({ client in try await LedgerDigests(client: client).latest() })
        else { throw CommandFailure("no digest yet: run `ledger seal` (or `ledger serve`, which seals in the background)") }
        print(json ? checkpoint.json.canonicalJSON : checkpoint.pinned)
    }
}
