import Crypto
import Foundation
import LedgerCore
import LedgerProviderClients
import LedgerProviders
import ProviderTestSupport
import Synchronization
import Testing

/// The App Store Server API client against a stand-in that checks its tokens as Apple does and answers signed.
@Suite("App Store Server API: asking Apple about a transaction")
struct AppStoreServerAPITests {
    let apple = FakeAppStoreServerAPI()
    let messages: AppleMessages

    init() throws { messages = try AppleMessages() }

    func client(
        _ base: String, key: P256.Signing.PrivateKey? = nil, keyId: String? = nil, waits: Waits = Waits(),
        timeout: Duration = AppStoreServerAPI.defaultTimeout
    ) -> AppStoreServerAPI {
        AppStoreServerAPI(
            key: AppStoreServerAPIKey(
                keyId: keyId ?? apple.expected.keyId, issuerId: apple.expected.issuerId, bundleId: apple.expected.bundleId,
                privateKey: key ?? apple.key),
            productionURL: base + "/production", sandboxURL: base + "/sandbox", timeout: timeout,
            sleep: { waits.record($0) })
    }

    /// The waits the client asked for, instead of waiting.
    final class Waits: Sendable {
        private let waits = Mutex<[Duration]>([])
        func record(_ duration: Duration) { waits.withLock { $0.append(duration) } }
        var all: [Duration] { waits.withLock { $0 } }
    }

    @Test func productionAnswersWithTheTransactionAppleSignedAndItVerifies() async throws {
        let signed = try messages.transaction(orderId: "o-1", transactionId: "2000000000000001")
        apple.hold(signed, for: "2000000000000001")
        try await apple.run { base async throws -> Void in
            let (answer, environment) = try await client(base).transactionInfo("2000000000000001")
            #expect(answer == signed && environment == .production)
            let transaction = try await ProviderTestKit.verifier(trusting: messages.ca).verifyTransaction(answer, now: Date())
            #expect(transaction.transactionId == "2000000000000001")
        }
        #expect(apple.requests == ["production 200 /production/inApps/v1/transactions/2000000000000001"])
    }

    @Test func aTransactionProductionDoesNotKnowIsAskedOfSandbox() async throws {
        apple.hold(try messages.transaction(orderId: "o-2", transactionId: "2000000000000002", environment: "Sandbox"),
                   for: "2000000000000002", in: "sandbox")
        try await apple.run { base async throws -> Void in
            #expect(try await client(base).transactionInfo("2000000000000002").environment == .sandbox)
        }
        #expect(apple.requests.map { $0.split(separator: " ").prefix(2).joined(separator: " ") } == ["production 404", "sandbox 200"])
    }

    @Test func aTransactionNeitherKnowsIsSaidSo() async throws {
        try await apple.run { base async throws -> Void in
            await #expect(throws: AppStoreServerAPIError.transactionNotFound("2000000000000003")) {
                try await client(base).transactionInfo("2000000000000003")
            }
        }
    }

    /// The stand-in checks the token's signature as Apple does: a token signed by another key, or naming another
    /// key id, is refused (401), and the client calls that a configuration error instead of asking again.
    @Test func aTokenAppleCannotCheckIsAConfigurationErrorNotARetry() async throws {
        apple.hold(try messages.transaction(orderId: "o-4", transactionId: "2000000000000004"), for: "2000000000000004")
        try await apple.run { base async throws -> Void in
            for wrong in [client(base, key: P256.Signing.PrivateKey()), client(base, keyId: "OTHERKEY99")] {
                do throws(AppStoreServerAPIError) {
                    _ = try await wrong.transactionInfo("2000000000000004")
                    Issue.record("a wrong key was accepted")
                } catch {
                    guard case .configuration = error else { Issue.record("\(error)"); continue }
                    #expect(!error.isRetryable)
                }
            }
        }
        #expect(apple.requests.allSatisfy { $0.hasPrefix("production 401") } && apple.requests.count == 2, "\(apple.requests)")
    }

    /// Apple's `Retry-After` is the UNIX time in milliseconds: read as seconds, every 429 waited the longest wait.
    @Test func aShortRateLimitIsWaitedOutUntilTheTimeAppleSays() async throws {
        apple.hold(try messages.transaction(orderId: "o-5", transactionId: "2000000000000005"), for: "2000000000000005")
        apple.rateLimit(next: 2, retryAfter: 2)
        let waits = Waits()
        try await apple.run { base async throws -> Void in
            #expect(try await client(base, waits: waits).transactionInfo("2000000000000005").environment == .production)
        }
        #expect(waits.all.count == 2)
        #expect(waits.all.allSatisfy { $0 > .seconds(1) && $0 <= .seconds(2) }, "\(waits.all)")
        #expect(apple.requests.map { $0.split(separator: " ")[1] } == ["429", "429", "200"])
    }

    /// Apple's error codes say whether asking again can help: an invalid transaction id (4000006) and an unknown
    /// account (4040001) are refused for good, an unknown app (4040003) is the configuration, the "retryable" 404s are
    /// Apple's to lift. They had all been asked again for 24 hours.
    @Test(arguments: [(400, 4_000_006, "refused"), (404, 4_040_001, "refused"), (404, 4_040_003, "configuration"),
                      (404, 4_040_002, "unavailable"), (404, 4_040_004, "unavailable")])
    func appleErrorCodesSayWhetherAskingAgainCanHelp(_ status: Int, _ code: Int64, _ expected: String) async throws {
        apple.answerNext(status: status, errorCode: code)
        try await apple.run { base async throws -> Void in
            do throws(AppStoreServerAPIError) {
                _ = try await client(base).transactionInfo("2000000000000005")
                Issue.record("an error was taken for an answer")
            } catch {
                let kind = switch error {
                case .refused: "refused"
                case .configuration: "configuration"
                case .unavailable: "unavailable"
                default: "\(error)"
                }
                #expect(kind == expected, "\(code): \(error)")
                #expect(error.isRetryable == (expected == "unavailable"), "\(code)")
            }
        }
        #expect(apple.requests.count == 1, "asked once: \(apple.requests)")
    }

    /// A question must be answered whole — head and body — within its time: an answer whose body drips a byte a
    /// second had held an attempt for minutes, the timeout covering only the head.
    @Test func anAnswerThatDripsEndsAtTheQuestionsDeadline() async throws {
        apple.dripAnswers(every: .milliseconds(500))
        let started = ContinuousClock.now
        try await apple.run { base async throws -> Void in
            do throws(AppStoreServerAPIError) {
                _ = try await client(base, timeout: .seconds(2)).transactionInfo("2000000000000005")
                Issue.record("a dripping answer was taken for an answer")
            } catch {
                guard case .unavailable = error else { Issue.record("\(error)"); return }
            }
        }
        // 4 KiB at 2 bytes a second would take over half an hour; the deadline is 2 s. The bound only tells the two
        // apart (a machine busy with the whole suite and two other loads took 23 s, the stand-in's start included).
        #expect(ContinuousClock.now - started < .seconds(300))
        #expect(apple.requests == ["production drip /production/inApps/v1/transactions/2000000000000005"], "\(apple.requests)")
    }

    /// Apple's limits are hourly: a 429 to come back in an hour ends the attempt at once, saying when.
    @Test func aLongRateLimitEndsTheAttemptWithTheTimeToAskAgain() async throws {
        apple.rateLimit(next: 1, retryAfter: 3_600)
        let waits = Waits()
        let before = Date()
        try await apple.run { base async throws -> Void in
            do throws(AppStoreServerAPIError) {
                _ = try await client(base, waits: waits).transactionInfo("2000000000000005")
                Issue.record("a 429 was taken for an answer")
            } catch {
                guard case .rateLimited(let until) = error else { Issue.record("\(error)"); return }
                #expect(until > before.addingTimeInterval(3_590) && until < Date().addingTimeInterval(3_610), "\(until)")
                #expect(error.isRetryable)
            }
        }
        #expect(waits.all.isEmpty)
        #expect(apple.requests.count == 1)
    }

    @Test func anAppleThatIsDownIsUnavailableAndWorthAskingAgain() async throws {
        apple.failNext(1)
        try await apple.run { base async throws -> Void in
            do throws(AppStoreServerAPIError) {
                _ = try await client(base).transactionInfo("2000000000000006")
                Issue.record("a 503 was taken for an answer")
            } catch {
                guard case .unavailable = error else { Issue.record("\(error)"); return }
                #expect(error.isRetryable)
            }
        }
    }

    @Test func anIdThatCouldChangeThePathIsNeverSent() async throws {
        try await apple.run { base async throws -> Void in
            for bad in ["../../v1/other", "123?x=1", "", "１２３"] {
                await #expect(throws: AppStoreServerAPIError.invalidTransactionId(bad)) {
                    try await client(base).transactionInfo(bad)
                }
            }
        }
        #expect(apple.requests.isEmpty)
    }
}
