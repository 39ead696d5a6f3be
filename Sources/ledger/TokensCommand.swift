import ArgumentParser
import Foundation
import LedgerCore
import LedgerPostgres

/// `ledger tokens create|list|rotate|revoke`: the API's bearer tokens.
struct TokensCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tokens", abstract: "Manage API tokens.", subcommands: [Create.self, List.self, Rotate.self, Revoke.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create a token; prints its secret once, alone on stdout.")
        @Option(help: "The token's name (recorded as the actor of the events it posts).") var name: String
        @Option(help: "Comma-separated: events:write, events:read, finance:read.") var scopes: String
        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            let scopes = try scopes.split(separator: ",").map { raw in
                let text = raw.trimmingCharacters(in: .whitespaces)
                guard let scope = Scope(rawValue: text) else { throw ValidationError(TokenError.unknownScope(text).description) }
                return scope
            }
            let (name, scopeList) = (name, scopes)
            let secret = try await database.withLedger { opened in
                try await opened.operations.createToken(name: name, scopes: scopeList)
            }
            try StandardOutput.line(secret)
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List tokens (never their secrets).")
        @Flag(help: "Print {\"tokens\": [{name, scopes, createdAt, revokedAt}]}.") var json = false
        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            let tokens = try await database.withLedger { opened in try await opened.operations.listTokens() }
            if json {
                return try StandardOutput.line(JSONValue.object(["tokens": .array(tokens.map { token in
                    .object([
                        "name": .string(token.name), "scopes": .array(token.scopes.map { .string($0.rawValue) }),
                        "createdAt": .string(RFC3339.format(token.createdAt)),
                        "revokedAt": token.revokedAt.map { .string(RFC3339.format($0)) } ?? .null,
                    ])
                })]).canonicalJSON)
            }
            try StandardOutput.line(Table(["NAME", "SCOPES", "CREATED", "REVOKED"], tokens.map { token in
                [token.name, token.scopes.map(\.rawValue).joined(separator: ","),
                 RFC3339Text(token.createdAt), token.revokedAt.map(RFC3339Text) ?? "-"]
            }).rendered)
        }
    }

    struct Rotate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "A new secret for a token, same name and scopes (the actor on its events stays the same).",
            discussion: """
                Prints the new secret once, alone on stdout. The secret it replaces is accepted for --overlap seconds \
                more (time to roll the new one out), then refused; the time is said on stderr. Revoking the token \
                refuses both. Over the API: POST /v1/tokens/NAME/rotate with a token of scope tokens:admin.
                """)
        @Argument(help: "The token's name.") var name: String
        @Option(help: "Seconds the replaced secret is still accepted (0: refused at once; at most a week).")
        var overlap = 3_600
        @OptionGroup var database: DatabaseOptions

        func validate() throws {
            guard (0...TokenError.maximumOverlapSeconds).contains(overlap) else {
                throw ValidationError("--overlap must be 0 to \(TokenError.maximumOverlapSeconds) seconds (a week)")
            }
        }

        func run() async throws {
            let (name, overlap) = (name, overlap)
            let rotated = try await database.withLedger { opened in
                try await opened.operations.rotateToken(name: name, overlap: .seconds(overlap))
            }
            try StandardOutput.line(rotated.secret)
            try? FileHandle.standardError.write(contentsOf: Data(
                "rotated \(name): the previous secret is accepted until \(RFC3339Text(rotated.previousValidUntil))\n".utf8))
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Revoke a token; its next request is refused.")
        @Argument(help: "The token's name.") var name: String
        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            let name = name
            try await database.withLedger { opened in try await opened.operations.revokeToken(name: name) }
            try StandardOutput.line("revoked \(name)")
        }
    }
}
