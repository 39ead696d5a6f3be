import ArgumentParser
import Foundation
import LedgerProviderClients
import LedgerProviders
import Logging

/// `--providers-config` (or `LEDGER_PROVIDERS_CONFIG`): the payment providers' configuration (docs/providers.md).
/// Without it every provider endpoint answers 501; a file that does not load stops the command with the field named.
struct ProviderOptions: ParsableArguments {
    @Option(
        name: .customLong("providers-config"),
        help: "JSON file configuring the App Store, Alipay and WeChat Pay verifiers (default: $LEDGER_PROVIDERS_CONFIG).")
    var path: String?

    var resolvedPath: String? { path ?? ProcessInfo.processInfo.environment["LEDGER_PROVIDERS_CONFIG"] }

    /// The verifiers the file enables, with one line per provider saying whether it is enabled (never a secret).
    func load(logger: Logger) throws -> ProviderVerifiers {
        guard let path = resolvedPath else {
            logger.info("providers: none configured (--providers-config); their endpoints answer 501")
            return ProviderVerifiers()
        }
        let verifiers: ProviderVerifiers
        do { verifiers = try ProviderVerifiers.load(configurationFile: path) } catch {
            throw Self.unusable(path, error)
        }
        func state(_ enabled: Bool) -> String { enabled ? "enabled" : "disabled (not in the file)" }
        logger.info("providers from \(path): app_store \(state(verifiers.appStore != nil)), alipay \(state(verifiers.alipay != nil)), wechat_pay \(state(verifiers.wechatPay != nil))")
        return verifiers
    }

    /// A providers file that is missing, unreadable or wrong is a configuration error (exit 78, EX_CONFIG), said on
    /// standard error naming the file and what is wrong with it.
    static func unusable(_ path: String, _ error: any Error) -> ExitCode {
        let reason = FileManager.default.fileExists(atPath: path) ? "\(error)" : "no such file"
        try? FileHandle.standardError.write(contentsOf: Data("Error: --providers-config \(path): \(reason)\n".utf8))
        return ExitCode(78)
    }

    /// The verifiers, and the questions the outbound clients the file enables can ask (recovery); none without a file.
    func loadWithQuestions(logger: Logger) throws -> (ProviderVerifiers, ProviderQuestions) {
        let verifiers = try load(logger: logger)
        var clients = ProviderClients()
        if let path = resolvedPath {
            do { clients = try ProviderClients.load(configurationFile: path) } catch {
                throw Self.unusable(path, error)
            }
        }
        return (verifiers, ProviderQuestions(clients: clients, verifiers: verifiers, logger: logger))
    }
}
