import Foundation
import LedgerProviders
import _CryptoExtras

/// The outbound clients a providers configuration enables (`serverAPI` of `appStore`), built once: the key is read
/// and parsed here, so a bad file fails the command with the field named, never the first question to Apple. A nil
/// client means that provider is never asked.
public struct ProviderClients: Sendable {
    public var appStore: AppStoreServerAPI?
    public var alipay: AlipayGateway?
    public var wechatPay: WeChatPayAPI?
    /// How Apple's `CONSUMPTION_REQUEST` is answered through `appStore`; nil (the default): never.
    public var consumptionAnswers: ConsumptionAnswerPolicy?

    public init(
        appStore: AppStoreServerAPI? = nil, alipay: AlipayGateway? = nil, wechatPay: WeChatPayAPI? = nil,
        consumptionAnswers: ConsumptionAnswerPolicy? = nil
    ) {
        self.appStore = appStore
        self.alipay = alipay
        self.wechatPay = wechatPay
        self.consumptionAnswers = consumptionAnswers
    }

    /// The clients of the file at `path` (`--providers-config` / `LEDGER_PROVIDERS_CONFIG`); relative paths in it are
    /// relative to its directory.
    public static func load(configurationFile path: String) throws(ProviderConfigurationError) -> ProviderClients {
        let url = URL(fileURLWithPath: path)
        guard let data = try? Data(contentsOf: url) else { throw .unreadableFile(path: path) }
        return try make(ProviderVerifiers.decode(data), baseDirectory: url.deletingLastPathComponent())
    }

    public static func make(_ configuration: ProviderConfiguration, baseDirectory: URL)
        throws(ProviderConfigurationError) -> ProviderClients
    {
        ProviderClients(
            appStore: try appStoreServerAPI(configuration, baseDirectory: baseDirectory),
            alipay: try alipayGateway(configuration, baseDirectory: baseDirectory),
            wechatPay: try weChatPayAPI(configuration, baseDirectory: baseDirectory),
            consumptionAnswers: configuration.appStore?.consumptionAnswers.map(ConsumptionAnswerPolicy.init))
    }

    static func weChatPayAPI(_ configuration: ProviderConfiguration, baseDirectory: URL)
        throws(ProviderConfigurationError) -> WeChatPayAPI?
    {
        guard let wechatPay = configuration.wechatPay, let query = wechatPay.query else { return nil }
        let key = try rsaPrivateKey(
            query.merchantPrivateKeyPath, baseDirectory: baseDirectory, field: "wechatPay.query.merchantPrivateKeyPath",
            which: "apiclient_key.pem")
        return WeChatPayAPI(
            merchantId: wechatPay.merchantId, serial: query.merchantCertificateSerial, privateKey: key,
            baseURL: query.baseURL ?? WeChatPayAPI.baseURL)
    }

    /// The RSA private key in the PEM file at `path`; `which` says in the error which key the field should hold.
    static func rsaPrivateKey(
        _ path: String, baseDirectory: URL, field: String, which: String
    ) throws(ProviderConfigurationError) -> _RSA.Signing.PrivateKey {
        let pem = try read(path, baseDirectory: baseDirectory, field: field)
        guard let key = try? _RSA.Signing.PrivateKey(pemRepresentation: pem) else {
            throw .invalid(field: field, reason: "not an RSA private key in PEM (\(which))")
        }
        return key
    }

    static func read(_ path: String, baseDirectory: URL, field: String) throws(ProviderConfigurationError) -> String {
        let url = path.hasPrefix("/") ? URL(fileURLWithPath: path) : baseDirectory.appendingPathComponent(path)
        guard let text = try? String(contentsOf: url, encoding: .utf8) else { throw .invalid(field: field, reason: "cannot read \(url.path)") }
        return text
    }

    static func alipayGateway(_ configuration: ProviderConfiguration, baseDirectory: URL)
        throws(ProviderConfigurationError) -> AlipayGateway?
    {
        guard let alipay = configuration.alipay, let query = alipay.query else { return nil }
        let key = try rsaPrivateKey(
            query.appPrivateKeyPath, baseDirectory: baseDirectory, field: "alipay.query.appPrivateKeyPath",
            which: "the app's own key, \"应用私钥\"")
        return AlipayGateway(appId: alipay.appId, privateKey: key, url: query.gatewayURL ?? AlipayGateway.gatewayURL)
    }

    static func appStoreServerAPI(_ configuration: ProviderConfiguration, baseDirectory: URL)
        throws(ProviderConfigurationError) -> AppStoreServerAPI?
    {
        guard let appStore = configuration.appStore, let api = appStore.serverAPI else { return nil }
        let field = "appStore.serverAPI"
        let bundleId: String
        if let given = api.bundleId {
            bundleId = given
        } else if appStore.apps.count == 1, let only = appStore.apps.first {
            bundleId = only.bundleId
        } else {
            throw .invalid(field: "\(field).bundleId", reason: "required when appStore.apps holds more than one app")
        }
        let pem = try read(api.privateKeyPath, baseDirectory: baseDirectory, field: "\(field).privateKeyPath")
        guard let privateKey = AppStoreServerAPIKey.privateKey(pem: pem) else {
            throw .invalid(field: "\(field).privateKeyPath", reason: "not a P-256 private key in PEM (the .p8 file Apple gives)")
        }
        let key = AppStoreServerAPIKey(keyId: api.keyId, issuerId: api.issuerId, bundleId: bundleId, privateKey: privateKey)
        return AppStoreServerAPI(
            key: key, productionURL: api.productionURL ?? AppStoreServerAPI.productionURL,
            sandboxURL: api.sandboxURL ?? AppStoreServerAPI.sandboxURL)
    }
}
