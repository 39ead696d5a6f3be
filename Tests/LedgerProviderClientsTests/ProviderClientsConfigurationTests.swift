import Foundation
import LedgerProviderClients
import LedgerProviders
import ProviderTestSupport
import Testing

/// The clients' part of the providers file: a bad key or a typo stops the command with the field named.
@Suite("Provider clients: configuration")
struct ProviderClientsConfigurationTests {
    func load(_ json: String, files: [String: String] = [:]) throws(ProviderConfigurationError) -> ProviderClients {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("clients-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        for (name, text) in files { try? Data(text.utf8).write(to: directory.appendingPathComponent(name)) }
        let file = directory.appendingPathComponent("providers.json")
        try? Data(json.utf8).write(to: file)
        return try ProviderClients.load(configurationFile: file.path)
    }

    static func appStore(_ serverAPI: String, apps: String = #"[{"bundleId": "com.example.a", "environments": ["Sandbox"]}]"#) -> String {
        #"{"appStore": {"trustedRoots": [{"pem": "x"}], "apps": \#(apps), "serverAPI": \#(serverAPI)}}"#
    }

    @Test func aServerAPIWithItsKeyBuildsTheClientAndNoneBuildsNone() throws {
        let key = FakeAppStoreServerAPI().privateKeyPEM
        let clients = try load(Self.appStore(#"{"keyId": "K", "issuerId": "I", "privateKeyPath": "k.p8"}"#), files: ["k.p8": key])
        #expect(clients.appStore != nil && clients.alipay == nil)
        #expect(try load(#"{}"#).appStore == nil)
    }

    @Test(arguments: [
        (#"{"keyId": "K", "issuerId": "I", "privateKeyPath": "missing.p8"}"#, "appStore.serverAPI.privateKeyPath"),
        (#"{"keyId": "K", "issuerId": "I", "privateKeyPath": "k.p8"}"#, "appStore.serverAPI.privateKeyPath"),  // not a key
        (#"{"keyId": "K", "issuerId": "I", "privateKeyPath": "k.p8", "productionUrl": "x"}"#, "appStore.serverAPI.productionUrl"),
        (#"{"keyId": "K", "issuerId": "I", "privateKeyPath": "k.p8", "productionURL": "ftp://x"}"#, "appStore.serverAPI.productionURL"),
        (#"{"issuerId": "I", "privateKeyPath": "k.p8"}"#, "appStore.serverAPI.keyId"),
    ])
    func aBadServerAPISectionNamesItsField(serverAPI: String, field: String) {
        do {
            _ = try load(Self.appStore(serverAPI), files: ["k.p8": "not a key"])
            Issue.record("loaded: \(serverAPI)")
        } catch {
            #expect("\(error)".contains(field), "\(error)")
        }
    }

    /// Consumption answers: off unless the section says so, and only with the customers' consent stated.
    @Test func consumptionAnswersAreOffByDefaultAndNeedConsentAndAKnownPreference() throws {
        let serverAPI = #"{"keyId": "K", "issuerId": "I", "privateKeyPath": "k.p8"}"#
        let key = ["k.p8": FakeAppStoreServerAPI().privateKeyPEM]
        func with(_ answers: String) -> String {
            #"{"appStore": {"trustedRoots": [{"pem": "x"}], "apps": [{"bundleId": "com.example.a", "environments": ["Sandbox"]}], "serverAPI": \#(serverAPI), "consumptionAnswers": \#(answers)}}"#
        }
        #expect(try load(Self.appStore(serverAPI), files: key).consumptionAnswers == nil)
        let policy = try load(with(#"{"customerConsented": true, "sampleContentProvided": true, "refundPreference": "declineWhenDelivered"}"#), files: key)
        #expect(policy.consumptionAnswers == ConsumptionAnswerPolicy(sampleContentProvided: true, refundPreference: .declineWhenDelivered))
        for refused in [
            #"{"customerConsented": false, "sampleContentProvided": true}"#,
            #"{"customerConsented": true, "sampleContentProvided": true, "refundPreference": "grant"}"#,
            #"{"customerConsented": true}"#,
        ] {
            do {
                _ = try load(with(refused), files: key)
                Issue.record("loaded: \(refused)")
            } catch {
                #expect("\(error)".contains("consumptionAnswers"), "\(error)")
            }
        }
    }

    /// examples/providers.json, every key of the file, loads: every client, and the consumption policy it states.
    @Test func theExampleProvidersFileLoadsEveryClient() throws {
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("examples/providers.json")
        let clients = try ProviderClients.load(configurationFile: file.path)
        #expect(clients.appStore != nil && clients.alipay != nil && clients.wechatPay != nil)
        #expect(clients.consumptionAnswers == ConsumptionAnswerPolicy(sampleContentProvided: false, refundPreference: .none))
    }

    @Test func twoAppsNeedTheBundleIdSaid() {
        let apps = #"[{"bundleId": "a", "environments": ["Sandbox"]}, {"bundleId": "b", "environments": ["Sandbox"]}]"#
        do {
            _ = try load(Self.appStore(#"{"keyId": "K", "issuerId": "I", "privateKeyPath": "k.p8"}"#, apps: apps),
                         files: ["k.p8": FakeAppStoreServerAPI().privateKeyPEM])
            Issue.record("loaded without a bundle id")
        } catch {
            #expect("\(error)".contains("appStore.serverAPI.bundleId"), "\(error)")
        }
    }

    @Test func alipayAndWeChatPayQuerySectionsNameTheirFields() throws {
        let alipay = { (query: String) in
            #"{"alipay": {"appId": "2021", "publicKey": "MIIB", "query": \#(query)}}"#
        }
        let wechat = { (query: String) in
            #"{"wechatPay": {"merchantId": "1900000001", "apiV3Key": "0123456789abcdefABCDEF0123456789", "platformKeys": [], "query": \#(query)}}"#
        }
        let key = try FakeAlipayGateway().appPrivateKeyPEM
        #expect(try load(alipay(#"{"appPrivateKeyPath": "app.pem"}"#), files: ["app.pem": key]).alipay != nil)
        #expect(try load(wechat(#"{"merchantPrivateKeyPath": "m.pem", "merchantCertificateSerial": "S"}"#), files: ["m.pem": key]).wechatPay != nil)
        for (json, field) in [
            (alipay(#"{"appPrivateKeyPath": "missing.pem"}"#), "alipay.query.appPrivateKeyPath"),
            (alipay(#"{"appPrivateKeyPath": "app.pem", "gatewayURL": "gateway"}"#), "alipay.query.gatewayURL"),
            (wechat(#"{"merchantPrivateKeyPath": "bad.pem", "merchantCertificateSerial": "S"}"#), "wechatPay.query.merchantPrivateKeyPath"),
            (wechat(#"{"merchantPrivateKeyPath": "m.pem", "serial": "S"}"#), "wechatPay.query.serial"),
        ] {
            do {
                _ = try load(json, files: ["app.pem": key, "m.pem": key, "bad.pem": "not a key"])
                Issue.record("loaded: \(json)")
            } catch {
                #expect("\(error)".contains(field), "\(error)")
            }
        }
    }
}
