import Foundation
import LedgerCore
import LedgerPostgres
import LedgerProviders

/// `verify --signatures`: every signed message the ledger keeps, checked again with the keys the providers file
/// configures. A summary line per provider (in the order App Store, Alipay, WeChat Pay), then a line per failure
/// naming where the message is kept, its kind and the check that failed. A provider the file does not configure is
/// not checked: when the ledger keeps messages of it, a line says so (never "ok"), and it fails nothing.
struct SignatureAudit {
    let verifiers: ProviderVerifiers

    /// What one provider's messages came to.
    struct Tally {
        /// What its messages are called, one and more ("App Store JWS" is its own plural).
        let noun: (one: String, many: String)
        /// The providers file's section that holds its keys.
        let section: String
        let configured: Bool
        var checked = 0
        var failures: [String] = []

        mutating func check(_ location: String, kind: String, _ verify: () async throws -> Void) async {
            checked += 1
            guard configured else { return }
            do { try await verify() } catch { failures.append("  \(location) (\(kind)): \(error)") }
        }

        var lines: [String] {
            if !configured {
                return checked == 0 ? [] : ["signatures: \(number) not checked: the providers file has no \(section) section"]
            }
            guard failures.isEmpty else { return ["signatures: \(failures.count) of \(checked) \(noun.many) fail"] + failures }
            return ["signatures: ok, \(number) verified"]
        }

        /// "1 Alipay message", "2 Alipay messages".
        private var number: String { "\(checked) \(checked == 1 ? noun.one : noun.many)" }
    }

    /// The report's lines, and whether every message checked verified.
    func run(_ operations: Operations) async throws -> (lines: [String], passed: Bool) {
        var appStore = Tally(noun: ("App Store JWS", "App Store JWS"), section: "appStore", configured: verifiers.appStore != nil)
        try await operations.forEachStoredAppStoreJWS { stored in
            await appStore.check(stored.location, kind: stored.kind.rawValue) {
                guard let verifier = verifiers.appStore else { return }
                switch stored.kind {
                case .notification: _ = try await verifier.verifyNotification(stored.jws, now: Date())
                case .transaction: _ = try await verifier.verifyTransaction(stored.jws, now: Date())
                }
            }
        }
        var alipay = Tally(noun: ("Alipay message", "Alipay messages"), section: "alipay", configured: verifiers.alipay != nil)
        var wechatPay = Tally(noun: ("WeChat Pay message", "WeChat Pay messages"), section: "wechatPay", configured: verifiers.wechatPay != nil)
        try await operations.forEachStoredProviderMessage { stored in
            let kind = StoredMessageKind(evidence: stored.evidence).rawValue
            switch stored.provider {
            case .alipay:
                await alipay.check(stored.location, kind: kind) { try verifiers.alipay?.verifyStoredSignature(evidence: stored.evidence) }
            case .wechatPay:
                await wechatPay.check(stored.location, kind: kind) { try verifiers.wechatPay?.verifyStoredSignature(evidence: stored.evidence) }
            case .appStore, .other:
                break  // the App Store's are JWS, checked above; `other` is never stored here (`StoredSignatures.notifying`)
            }
        }
        let tallies = [appStore, alipay, wechatPay]
        return (tallies.flatMap(\.lines), tallies.allSatisfy(\.failures.isEmpty))
    }
}
