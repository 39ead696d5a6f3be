import Foundation
import X509
import _CryptoExtras

/// The verifiers a configuration enables, built once at start-up: certificates and keys are read and parsed
/// here, so a bad file fails the start with the field named, never the first notification. A nil verifier means
/// that provider's endpoint is disabled.
public struct ProviderVerifiers: Sendable {
    public var appStore: AppStoreJWSVerifier?
    public var alipay: AlipayNotificationVerifier?
    public var wechatPay: WeChatPayNotificationVerifier?

    public init(
        appStore: AppStoreJWSVerifier? = nil, alipay: AlipayNotificationVerifier? = nil,
        wechatPay: WeChatPayNotificationVerifier? = nil
    ) {
        self.appStore = appStore
        self.alipay = alipay
        self.wechatPay = wechatPay
    }

    /// Reads and decodes the file at `path` (`--providers-config` / `LEDGER_PROVIDERS_CONFIG`) and builds the
    /// verifiers; relative paths inside it are relative to the file's directory.
    public static func load(configurationFile path: String) throws(ProviderConfigurationError) -> ProviderVerifiers {
        let url = URL(fileURLWithPath: path)
        guard let data = try? Data(contentsOf: url) else { throw .unreadableFile(path: path) }
        let configuration = try decode(data)
        return try make(configuration, baseDirectory: url.deletingLastPathComponent())
    }

    /// Decodes a configuration document; errors name the field.
    public static func decode(_ data: Data) throws(ProviderConfigurationError) -> ProviderConfiguration {
        do { return try JSONDecoder().decode(ProviderConfiguration.self, from: data) } catch {
            throw .invalid(field: DecodingErrorField.path(of: error), reason: DecodingErrorField.reason(of: error))
        }
    }

    /// Builds the verifiers of `configuration`, reading files relative to `baseDirectory`.
    public static func make(_ configuration: ProviderConfiguration, baseDirectory: URL)
        throws(ProviderConfigurationError) -> ProviderVerifiers
    {
        var verifiers = ProviderVerifiers()
        func read(_ path: String, field: String) throws(ProviderConfigurationError) -> Data {
            let url = path.hasPrefix("/") ? URL(fileURLWithPath: path) : baseDirectory.appendingPathComponent(path)
            guard let data = try? Data(contentsOf: url) else { throw .invalid(field: field, reason: "cannot read \(url.path)") }
            return data
        }
        if let section = configuration.appStore {
            var roots: [Certificate] = []
            for (index, source) in section.trustedRoots.enumerated() {
                let field = "appStore.trustedRoots[\(index)].\(source.path == nil ? "pem" : "path")"
                let certificate: Certificate?
                if let path = source.path {
                    let data = try read(path, field: field)
                    let pem = String(decoding: data, as: UTF8.self)
                    certificate = pem.contains("-----BEGIN CERTIFICATE-----")
                        ? try? Certificate(pemEncoded: pem) : try? Certificate(derEncoded: Array(data))
                } else {
                    certificate = try? Certificate(pemEncoded: source.pem ?? "")
                }
                guard let certificate else { throw .invalid(field: field, reason: "not an X.509 certificate (DER or PEM)") }
                roots.append(certificate)
            }
            let apps = section.apps.map {
                AppStoreApp(bundleId: $0.bundleId, appAppleId: $0.appAppleId, environments: Set($0.environments),
                            allowXcode: $0.allowXcode ?? false)
            }
            verifiers.appStore = AppStoreJWSVerifier(
                trustedRoots: roots, apps: apps, signedDateTolerance: section.signedDateToleranceSeconds ?? 300)
        }
        if let section = configuration.alipay {
            let field = section.publicKeyPath == nil ? "alipay.publicKey" : "alipay.publicKeyPath"
            let text = try section.publicKeyPath.map { (path) throws(ProviderConfigurationError) in
                String(decoding: try read(path, field: field), as: UTF8.self)
            } ?? section.publicKey ?? ""
            guard let key = try? RSAPublicKeyPEM.parse(text) else {
                throw .invalid(field: field, reason: "not an RSA public key (2048 bits or more) in PEM or base64 DER")
            }
            verifiers.alipay = AlipayNotificationVerifier(appId: section.appId, publicKey: key, sellerId: section.sellerId)
        }
        if let section = configuration.wechatPay {
            var keys: [String: _RSA.Signing.PublicKey] = [:]
            for (index, entry) in section.platformKeys.enumerated() {
                let field = "wechatPay.platformKeys[\(index)].\(entry.path == nil ? "pem" : "path")"
                let text = try entry.path.map { (path) throws(ProviderConfigurationError) in
                    String(decoding: try read(path, field: field), as: UTF8.self)
                } ?? entry.pem ?? ""
                guard let key = try? RSAPublicKeyPEM.parse(text) else {
                    throw .invalid(field: field, reason: "not an RSA public key or certificate (2048 bits or more) in PEM")
                }
                guard keys.updateValue(key, forKey: entry.serial) == nil else {
                    throw .invalid(field: "wechatPay.platformKeys[\(index)].serial", reason: "duplicate serial")
                }
            }
            verifiers.wechatPay = WeChatPayNotificationVerifier(
                merchantId: section.merchantId, apiV3Key: section.apiV3Key, platformKeys: keys,
                maximumClockSkew: section.maximumClockSkewSeconds ?? 300)
        }
        return verifiers
    }
}
