import Foundation
import LedgerCore
@testable import LedgerPostgres
import LedgerTestSupport
import ProviderTestSupport
import Testing

/// The README's two ways to verify a delivery are the ones the tests run: its Swift is the tests' receiver's, word
/// for word, and its Python, run by `python3`, accepts a real delivery and refuses it altered.
@Suite("Webhooks: the README's verification code")
struct ReadmeVerificationTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The fenced blocks of `language` in the README's "Verify a delivery".
    static func blocks(_ language: String) throws -> [String] {
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        guard let section = readme.components(separatedBy: "### Verify a delivery").dropFirst().first?
            .components(separatedBy: "\n### ").first else { return [] }
        return section.components(separatedBy: "```\(language)\n").dropFirst().compactMap { $0.components(separatedBy: "```").first }
    }

    @Test func theSwiftIsTheReceiversOwn() throws {
        let swift = try #require(try Self.blocks("swift").first)
        let function = try #require(swift.components(separatedBy: "func isSignedByLedger").dropFirst().first)
        let receiver = try String(
            contentsOf: Self.root.appendingPathComponent("Tests/ProviderTestSupport/WebhookReceiver.swift"), encoding: .utf8)
        let squeezed = { (text: String) in text.split(whereSeparator: \.isWhitespace).joined(separator: " ") }
        #expect(squeezed(receiver).contains(squeezed("func isSignedByLedger" + function)))
    }

    @Test func thePythonAcceptsARealDeliveryAndRefusesItAltered() async throws {
        let python = try #require(try Self.blocks("python").first)
        try await WebhookFixture.run { fixture in
            try await recordHappyOrders(1, on: fixture.database.ledger)
            try await fixture.queue(6)
            _ = try await fixture.dispatcher(realTime: true).deliverDue()
            let delivery = try #require(fixture.receiver.all.first)
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("readme-python-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            try Data(delivery.body).write(to: directory.appendingPathComponent("body"))
            let script = python + """

                import json, sys
                body = open(sys.argv[1], "rb").read()
                headers = {"webhook-id": sys.argv[2], "webhook-timestamp": sys.argv[3], "webhook-signature": sys.argv[4]}
                print(is_signed_by_ledger(body, headers, sys.argv[5]), is_signed_by_ledger(body + b" ", headers, sys.argv[5]))
                """
            try script.write(to: directory.appendingPathComponent("verify.py"), atomically: true, encoding: .utf8)
            let process = SpawnedProcess()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = [
                "python3", directory.appendingPathComponent("verify.py").path, directory.appendingPathComponent("body").path,
                delivery.id, delivery.timestamp, delivery.signatures, fixture.secret.text,
            ]
            let output = Pipe()
            process.standardOutput = output
            try process.run()
            let printed = String(decoding: try output.fileHandleForReading.readToEnd() ?? Data(), as: UTF8.self)
            process.waitUntilExit()
            #expect(printed == "True False\n", "\(printed)")
        }
    }
}
