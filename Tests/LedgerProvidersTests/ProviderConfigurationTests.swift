import Foundation
import ProviderTestSupport
import LedgerProviders
import Testing
import X509

/// The configuration file: sections optional, fields named in errors, secrets redacted.
@Suite("Providers configuration file")
struct ProviderConfigurationTests {
    typealias Kit = ProviderTestKit

    func document(apiV3Key: String = Kit.apiV3KeyText, rootPath: String = "roots/test-root.der") -> String {
        """
        {
          "appStore": {
            "trustedRoots": [{ "path": "\(rootPath)" }],
            "apps": [{ "bundleId": "\(Kit.bundleId)", "appAppleId": \(Kit.appAppleId),
                       "environments": ["Production", "Sandbox"], "allowXcode": false }]
          },
          "alipay": { "appId": "\(Kit.alipayAppId)", "publicKey": \(jsonString(Kit.alipayKey.publicKey.pemRepresentation)) },
          "wechatPay": {
            "merchantId": "\(Kit.merchantId)", "apiV3Key": "\(apiV3Key)",
            "platformKeys": [{ "serial": "\(Kit.platformSerial)", "pem": \(jsonString(Kit.wechatPlatformKey.publicKey.pemRepresentation)) }]
          }
        }
        """
    }

    func jsonString(_ text: String) -> String {
        String(decoding: (try? JSONEncoder().encode(text)) ?? Data(), as: UTF8.self)
    }

    func error(_ json: String) -> ProviderConfigurationError? {
        do { _ = try ProviderVerifiers.decode(Data(json.utf8)); return nil } catch { return error }
    }

    @Test func aFileWithAllThreeSectionsBuildsThreeVerifiersThatVerify() async throws {
        let ca = try Kit.CA()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("providers-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("roots"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try Kit.der(ca.root).write(to: directory.appendingPathComponent("roots/test-root.der"))
        let file = directory.appendingPathComponent("providers.json")
        try Data(document().utf8).write(to: file)

        let verifiers = try ProviderVerifiers.load(configurationFile: file.path)
        let appStore = try #require(verifiers.appStore)
        _ = try await appStore.verifyTransaction(try Kit.jws(payload: Kit.transactionPayload(), ca: ca), now: Kit.now)
        _ = try #require(verifiers.alipay).verify(body: try Kit.alipayBody(Kit.alipayParameters()))
        let body = try Kit.wechatBody(resource: Kit.wechatPaymentResource())
        _ = try #require(verifiers.wechatPay).verify(headers: try Kit.wechatHeaders(body: body), body: body, now: Kit.now)
    }

    @Test func aMissingSectionDisablesThatProvider() throws {
        let configuration = try ProviderVerifiers.decode(Data("{}".utf8))
        let verifiers = try ProviderVerifiers.make(configuration, baseDirectory: URL(fileURLWithPath: "/"))
        #expect(verifiers.appStore == nil && verifiers.alipay == nil && verifiers.wechatPay == nil)
    }

    @Test func theAPIv3KeyNeverAppearsInDescriptions() throws {
        let configuration = try ProviderVerifiers.decode(Data(document().utf8))
        var dumped = ""
        dump(configuration, to: &dumped)
        var dumpedVerifier = ""
        let wechat = try ProviderVerifiers.make(
            ProviderVerifiers.decode(Data(#"{"wechatPay": {"merchantId": "1", "apiV3Key": "\#(Kit.apiV3KeyText)", "platformKeys": []}}"#.utf8)),
            baseDirectory: URL(fileURLWithPath: "/")).wechatPay
        dump(wechat, to: &dumpedVerifier)
        for text in [configuration.description, configuration.debugDescription, String(reflecting: configuration), dumped,
                     String(describing: wechat), String(reflecting: wechat), dumpedVerifier,
                     String(describing: configuration.wechatPay), String(reflecting: configuration.wechatPay?.apiV3Key)] {
            #expect(!text.contains(Kit.apiV3KeyText), "\(text)")
        }
        #expect(configuration.description.contains("<redacted>"))
    }

    @Test func anAPIv3KeyOfTheWrongLengthIsNamedWithoutItsValue() {
        let failure = error(document(apiV3Key: "short-secret"))
        #expect(failure == .invalid(field: "wechatPay.apiV3Key", reason: "must be exactly 32 bytes"))
        #expect(!String(describing: failure).contains("short-secret"))
    }

    @Test func anUnknownFieldIsRefusedByName() {
        #expect(error(#"{"appstore": {}}"#) == .invalid(field: "appstore", reason: "unknown field"))
        #expect(error(#"{"alipay": {"appId": "1", "publicKey": "x", "publickey": "y"}}"#)
            == .invalid(field: "alipay.publickey", reason: "unknown field"))
    }

    @Test func aMissingFieldIsNamed() {
        #expect(error(#"{"alipay": {"publicKey": "x"}}"#) == .invalid(field: "alipay.appId", reason: "missing"))
    }

    @Test func productionWithoutAnAppAppleIdIsRefused() {
        let json = #"{"appStore": {"trustedRoots": [{"pem": "x"}], "apps": [{"bundleId": "b", "environments": ["Production"]}]}}"#
        #expect(error(json) == .invalid(field: "appStore.apps[0].appAppleId", reason: "required when environments include Production"))
    }

    @Test func aNegativeClockSkewIsNamed() {
        let json = #"{"wechatPay": {"merchantId": "1", "apiV3Key": "\#(Kit.apiV3KeyText)", "platformKeys": [], "maximumClockSkewSeconds": -1}}"#
        #expect(error(json) == .invalid(field: "wechatPay.maximumClockSkewSeconds", reason: "must be 0...3600 seconds"))
    }

    @Test func anUnknownEnvironmentIsNamed() {
        let json = #"{"appStore": {"trustedRoots": [{"pem": "x"}], "apps": [{"bundleId": "b", "environments": ["Sandbox", "Staging"]}]}}"#
        guard case .invalid(let field, _) = error(json) else { Issue.record("not refused"); return }
        #expect(field == "appStore.apps[0].environments[1]")
    }

    @Test func anUnreadableRootFileIsNamed() throws {
        let configuration = try ProviderVerifiers.decode(Data(document(rootPath: "missing.der").utf8))
        #expect(throws: ProviderConfigurationError.invalid(field: "appStore.trustedRoots[0].path", reason: "cannot read /nonexistent/missing.der")) {
            try ProviderVerifiers.make(configuration, baseDirectory: URL(fileURLWithPath: "/nonexistent"))
        }
    }

    @Test func aKeyThatIsNotAnRSAKeyIsNamed() throws {
        let json = #"{"alipay": {"appId": "1", "publicKey": "not a key"}}"#
        let configuration = try ProviderVerifiers.decode(Data(json.utf8))
        #expect(throws: ProviderConfigurationError.self) {
            try ProviderVerifiers.make(configuration, baseDirectory: URL(fileURLWithPath: "/"))
        }
        do { _ = try ProviderVerifiers.make(configuration, baseDirectory: URL(fileURLWithPath: "/")) } catch {
            guard case .invalid(let field, _) = error else { Issue.record("\(error)"); return }
            #expect(field == "alipay.publicKey")
        }
    }

    @Test func alipaysBareBase64KeyIsAccepted() throws {
        let bare = Kit.alipayKey.publicKey.derRepresentation.base64EncodedString()
        let json = #"{"alipay": {"appId": "\#(Kit.alipayAppId)", "publicKey": "\#(bare)"}}"#
        let verifiers = try ProviderVerifiers.make(ProviderVerifiers.decode(Data(json.utf8)), baseDirectory: URL(fileURLWithPath: "/"))
        _ = try #require(verifiers.alipay).verify(body: try Kit.alipayBody(Kit.alipayParameters()))
    }
}
