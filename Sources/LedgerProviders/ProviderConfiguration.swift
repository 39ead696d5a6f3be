import Foundation

/// The payment providers' settings, decoded from one JSON file (see docs/providers.md). Each section is
/// optional: a missing section means that provider's endpoint is disabled. Unknown fields are refused, so a typo
/// (`"appstore"`) is an error at start-up rather than a silently disabled provider. Secrets never appear in
/// `description`, `debugDescription` or a reflection.
public struct ProviderConfiguration: Decodable, Sendable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    public var appStore: AppStore?
    public var alipay: Alipay?
    public var wechatPay: WeChatPay?

    /// App Store: the trusted roots (Apple Root CA - G3) and the apps whose messages are accepted.
    public struct AppStore: Decodable, Sendable {
        public var trustedRoots: [CertificateSource]
        public var apps: [App]
        /// How far in the future a `signedDate` may lie; default 300.
        public var signedDateToleranceSeconds: Double?
        /// The App Store Server API, for asking Apple about a transaction (`ledger recover`); none: never asked.
        public var serverAPI: ServerAPI?
        /// Answering Apple's `CONSUMPTION_REQUEST` through the Server API; none (the default): never answered.
        public var consumptionAnswers: ConsumptionAnswers?
    }

    /// How the ledger answers Apple's `CONSUMPTION_REQUEST` (a customer asked Apple for a refund, and Apple asks what
    /// the developer knows) with Send Consumption Information: whether the purchase was delivered, from the ledger.
    /// Apple takes such data only with the customer's consent, which the operator's own terms must obtain: the
    /// section says so (`customerConsented` must be true), and leaving it out never answers.
    public struct ConsumptionAnswers: Decodable, Sendable {
        public var customerConsented: Bool
        /// Whether the app offers a free sample, trial or description of what is sold before a purchase.
        public var sampleContentProvided: Bool
        /// `none` (the default: no preference, Apple decides from the delivery) or `declineWhenDelivered` (decline a
        /// refund of what the ledger shows delivered, grant it in full otherwise).
        public var refundPreference: String?
    }

    /// The In-App Purchase key Apple issued for the App Store Server API, and where to reach it. `bundleId` may be
    /// left out when `apps` holds one app. The URLs default to Apple's hosts; a test points them at a stand-in.
    public struct ServerAPI: Decodable, Sendable {
        public var keyId: String
        public var issuerId: String
        /// The `.p8` file (PKCS#8, P-256), relative to the configuration file.
        public var privateKeyPath: String
        public var bundleId: String?
        public var productionURL: String?
        public var sandboxURL: String?
    }

    /// One app; see ``AppStoreApp``.
    public struct App: Decodable, Sendable {
        public var bundleId: String
        public var appAppleId: Int64?
        public var environments: [AppStoreEnvironment]
        public var allowXcode: Bool?
    }

    /// A certificate given either by file (`path`, DER or PEM; relative to the configuration file) or inline (`pem`).
    public struct CertificateSource: Decodable, Sendable {
        public var path: String?
        public var pem: String?
    }

    /// Alipay: the app id and Alipay's public key ("支付宝公钥", not the app's own key).
    public struct Alipay: Decodable, Sendable {
        public var appId: String
        /// PEM, or the bare base64 key as shown in Alipay's console. Exactly one of `publicKey`, `publicKeyPath`.
        public var publicKey: String?
        public var publicKeyPath: String?
        /// The merchant PID (`2088...`); when set, notifications' `seller_id` must equal it.
        public var sellerId: String?
        /// Asking Alipay about a trade (`alipay.trade.query`, `ledger recover`); none: never asked.
        public var query: AlipayQuery?
    }

    /// The app's own private key (it signs the ledger's requests; Alipay holds its public half) and the gateway.
    public struct AlipayQuery: Decodable, Sendable {
        /// PEM (PKCS#1 or PKCS#8) RSA private key, relative to the configuration file.
        public var appPrivateKeyPath: String
        /// Default `https://openapi.alipay.com/gateway.do`; the sandbox's, or a test's stand-in, otherwise.
        public var gatewayURL: String?
    }

    /// WeChat Pay: merchant id, APIv3 key (a secret) and the platform keys by serial.
    public struct WeChatPay: Decodable, Sendable {
        public var merchantId: String
        public var apiV3Key: WeChatPayAPIv3Key
        public var platformKeys: [PlatformKey]
        /// How far `Wechatpay-Timestamp` may be from now, either way; default 300.
        public var maximumClockSkewSeconds: Double?
        /// Asking WeChat Pay about an order (the order query, `ledger recover`); none: never asked.
        public var query: WeChatPayQuery?
    }

    /// The merchant's API key pair (it signs the ledger's requests) and where to reach WeChat Pay.
    public struct WeChatPayQuery: Decodable, Sendable {
        /// The merchant API private key (`apiclient_key.pem`), relative to the configuration file.
        public var merchantPrivateKeyPath: String
        /// The serial number of the merchant API certificate (`serial_no` of each request).
        public var merchantCertificateSerial: String
        /// Default `https://api.mch.weixin.qq.com`; a test's stand-in otherwise.
        public var baseURL: String?
    }

    /// A platform certificate or WeChat Pay public key, named by its serial (`Wechatpay-Serial`): `pem` inline or
    /// `path` to a PEM file, exactly one.
    public struct PlatformKey: Decodable, Sendable {
        public var serial: String
        public var pem: String?
        public var path: String?
    }

    public var description: String {
        var sections: [String] = []
        if let appStore {
            sections.append("appStore: apps \(appStore.apps.map(\.bundleId)), \(appStore.trustedRoots.count) trusted root(s)")
        }
        if let alipay { sections.append("alipay: appId \(alipay.appId)") }
        if let wechatPay {
            sections.append("wechatPay: merchantId \(wechatPay.merchantId), apiV3Key <redacted>, serials \(wechatPay.platformKeys.map(\.serial))")
        }
        return "ProviderConfiguration(\(sections.isEmpty ? "no providers" : sections.joined(separator: "; ")))"
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror { Mirror(self, children: ["summary": description], displayStyle: .struct) }
}

extension WeChatPayAPIv3Key: Decodable {
    /// A string of exactly 32 bytes; the error never repeats the value.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        guard let key = WeChatPayAPIv3Key(try container.decode(String.self)) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "must be exactly 32 bytes")
        }
        self = key
    }
}

/// Why the providers' configuration could not be used; `field` is the dotted path in the file
/// (`wechatPay.platformKeys[0].pem`), so the operator knows what to fix.
public enum ProviderConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    case unreadableFile(path: String)
    case invalid(field: String, reason: String)

    public var description: String {
        switch self {
        case .unreadableFile(let path): "providers configuration: cannot read \(path)"
        case .invalid(let field, let reason): "providers configuration: \(field): \(reason)"
        }
    }
}
