import ArgumentParser
import Foundation
import LedgerPostgres

/// On the embedded database, a first `serve` with no tokens creates one with every scope, prints it once and
/// saves it to `<data dir>/dev-token`, so a new user can call the API at once.
enum DevelopmentToken {
    static let name = "dev"

    /// Every start says where the token is, ready to paste (`export TOKEN=…`): the data directory may not be
    /// `./.ledger` (as root under a private directory it is under /var/tmp/orderledger), and a second start printed
    /// nothing.
    static func ensure(operations: Operations, dataDirectory: URL) async throws {
        let file = self.file(in: dataDirectory)
        guard try await operations.hasNoTokens() else {
            if FileManager.default.fileExists(atPath: file.path) {
                announce("development token: export TOKEN=$(cat \(file.path))   (or: TOKEN=$(swift run ledger dev-token))")
            }
            return
        }
        let secret = try await operations.createToken(name: name, scopes: Scope.allCases)
        guard FileManager.default.createFile(
            atPath: file.path, contents: Data((secret + "\n").utf8), attributes: [.posixPermissions: 0o600])
        else { throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: file.path]) }
        announce("development token (all scopes), saved to \(file.path):")
        announce(secret)
        announce("export TOKEN=$(cat \(file.path))   (or: TOKEN=$(swift run ledger dev-token))")
    }

    static func file(in dataDirectory: URL) -> URL {
        dataDirectory.appendingPathComponent("dev-token")
    }
}

/// `ledger dev-token`: prints the development token `serve` saved in its data directory (found as `serve` finds it:
/// `LEDGER_DATA_DIR`, else from the working directory), so the walkthrough's first line works wherever it is run.
struct DevTokenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dev-token",
        abstract: "Print the development token serve saved for its embedded database.")

    func run() throws {
        let file = DevelopmentToken.file(in: EmbeddedPostgres.defaultDataDirectory())
        guard let data = FileManager.default.contents(atPath: file.path) else {
            try? FileHandle.standardError.write(contentsOf: Data(
                "Error: no development token at \(file.path): start `ledger serve` (without DATABASE_URL) from this directory first\n".utf8))
            throw ExitCode(66)  // EX_NOINPUT
        }
        try StandardOutput.line(String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }
}
