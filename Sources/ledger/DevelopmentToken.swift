import Foundation
import LedgerPostgres

/// On the embedded database, a first `serve` with no tokens creates one with every scope, prints it once and
/// saves it to `<data dir>/dev-token`, so a new user can call the API at once.
enum DevelopmentToken {
    static let name = "dev"

    static func ensure(operations: Operations, dataDirectory: URL) async throws {
        guard try await operations.hasNoTokens() else { return }
        let secret = try await operations.createToken(name: name, scopes: Scope.allCases)
        let file = dataDirectory.appendingPathComponent("dev-token")
        guard FileManager.default.createFile(
            atPath: file.path, contents: Data((secret + "\n").utf8), attributes: [.posixPermissions: 0o600])
        else { throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: file.path]) }
        announce("development token (all scopes), saved to \(file.path):")
        announce(secret)
    }
}
