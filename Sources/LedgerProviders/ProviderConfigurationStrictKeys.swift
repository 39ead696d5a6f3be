import Foundation

/// Unknown-field refusal for the configuration's `Decodable` types: each lists the fields it knows and any
/// other is a `DecodingError` at that path, which ``DecodingErrorField`` turns into "field: unknown field".
struct AnyCodingKey: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) {
        self.stringValue = String(intValue)
        self.intValue = intValue
    }
}

extension Decoder {
    func refuseUnknownKeys(_ known: Set<String>) throws {
        let container = try self.container(keyedBy: AnyCodingKey.self)
        for key in container.allKeys where !known.contains(key.stringValue) {
            throw DecodingError.dataCorruptedError(forKey: key, in: container, debugDescription: "unknown field")
        }
    }
}

extension KeyedDecodingContainer {
    /// An optional base URL of a provider's API: http or https (a test's stand-in listens on plain http).
    func decodeHTTPURLIfPresent(forKey key: Key) throws -> String? {
        let url = try decodeIfPresent(String.self, forKey: key)
        if let url, URL(string: url)?.scheme.map({ ["http", "https"].contains($0) }) != true {
            throw DecodingError.dataCorruptedError(forKey: key, in: self, debugDescription: "must be an http(s) URL")
        }
        return url
    }
}

extension ProviderConfiguration {
    enum CodingKeys: String, CodingKey, CaseIterable { case appStore, alipay, wechatPay }

    public init(from decoder: any Decoder) throws {
        try decoder.refuseUnknownKeys(Set(CodingKeys.allCases.map(\.rawValue)))
        let container = try decoder.container(keyedBy: CodingKeys.self)
        appStore = try container.decodeIfPresent(AppStore.self, forKey: .appStore)
        alipay = try container.decodeIfPresent(Alipay.self, forKey: .alipay)
        wechatPay = try container.decodeIfPresent(WeChatPay.self, forKey: .wechatPay)
    }
}

extension ProviderConfiguration.AppStore {
    enum CodingKeys: String, CodingKey, CaseIterable {
        case trustedRoots, apps, signedDateToleranceSeconds, serverAPI, consumptionAnswers
    }

    public init(from decoder: any Decoder) throws {
        try decoder.refuseUnknownKeys(Set(CodingKeys.allCases.map(\.rawValue)))
        let container = try decoder.container(keyedBy: CodingKeys.self)
        trustedRoots = try container.decode([ProviderConfiguration.CertificateSource].self, forKey: .trustedRoots)
        guard !trustedRoots.isEmpty else {
            throw DecodingError.dataCorruptedError(forKey: .trustedRoots, in: container, debugDescription: "must not be empty")
        }
        apps = try container.decode([ProviderConfiguration.App].self, forKey: .apps)
        signedDateToleranceSeconds = try container.decodeIfPresent(Double.self, forKey: .signedDateToleranceSeconds)
        if let seconds = signedDateToleranceSeconds, !(0...86_400).contains(seconds) {
            throw DecodingError.dataCorruptedError(
                forKey: .signedDateToleranceSeconds, in: container, debugDescription: "must be 0...86400 seconds")
        }
        serverAPI = try container.decodeIfPresent(ProviderConfiguration.ServerAPI.self, forKey: .serverAPI)
        consumptionAnswers = try container.decodeIfPresent(ProviderConfiguration.ConsumptionAnswers.self, forKey: .consumptionAnswers)
        if consumptionAnswers != nil, serverAPI == nil {
            throw DecodingError.dataCorruptedError(
                forKey: .consumptionAnswers, in: container, debugDescription: "needs serverAPI: answers are sent through it")
        }
    }
}

extension ProviderConfiguration.ConsumptionAnswers {
    enum CodingKeys: String, CodingKey, CaseIterable { case customerConsented, sampleContentProvided, refundPreference }
    public static let refundPreferences = ["none", "declineWhenDelivered"]

    public init(from decoder: any Decoder) throws {
        try decoder.refuseUnknownKeys(Set(CodingKeys.allCases.map(\.rawValue)))
        let container = try decoder.container(keyedBy: CodingKeys.self)
        customerConsented = try container.decode(Bool.self, forKey: .customerConsented)
        guard customerConsented else {
            throw DecodingError.dataCorruptedError(
                forKey: .customerConsented, in: container,
                debugDescription: "must be true: Apple takes consumption data only with the customer's consent (leave consumptionAnswers out to never answer)")
        }
        sampleContentProvided = try container.decode(Bool.self, forKey: .sampleContentProvided)
        refundPreference = try container.decodeIfPresent(String.self, forKey: .refundPreference)
        if let preference = refundPreference, !Self.refundPreferences.contains(preference) {
            throw DecodingError.dataCorruptedError(
                forKey: .refundPreference, in: container,
                debugDescription: "must be one of \(Self.refundPreferences.joined(separator: ", "))")
        }
    }
}

extension ProviderConfiguration.ServerAPI {
    enum CodingKeys: String, CodingKey, CaseIterable { case keyId, issuerId, privateKeyPath, bundleId, productionURL, sandboxURL }

    public init(from decoder: any Decoder) throws {
        try decoder.refuseUnknownKeys(Set(CodingKeys.allCases.map(\.rawValue)))
        let container = try decoder.container(keyedBy: CodingKeys.self)
        keyId = try container.decode(String.self, forKey: .keyId)
        issuerId = try container.decode(String.self, forKey: .issuerId)
        privateKeyPath = try container.decode(String.self, forKey: .privateKeyPath)
        bundleId = try container.decodeIfPresent(String.self, forKey: .bundleId)
        productionURL = try container.decodeHTTPURLIfPresent(forKey: .productionURL)
        sandboxURL = try container.decodeHTTPURLIfPresent(forKey: .sandboxURL)
    }
}

extension ProviderConfiguration.App {
    enum CodingKeys: String, CodingKey, CaseIterable { case bundleId, appAppleId, environments, allowXcode }

    public init(from decoder: any Decoder) throws {
        try decoder.refuseUnknownKeys(Set(CodingKeys.allCases.map(\.rawValue)))
        let container = try decoder.container(keyedBy: CodingKeys.self)
        bundleId = try container.decode(String.self, forKey: .bundleId)
        appAppleId = try container.decodeIfPresent(Int64.self, forKey: .appAppleId)
        environments = try container.decode([AppStoreEnvironment].self, forKey: .environments)
        allowXcode = try container.decodeIfPresent(Bool.self, forKey: .allowXcode)
        if environments.contains(.production), appAppleId == nil {
            throw DecodingError.dataCorruptedError(
                forKey: .appAppleId, in: container, debugDescription: "required when environments include Production")
        }
    }
}

extension ProviderConfiguration.CertificateSource {
    enum CodingKeys: String, CodingKey, CaseIterable { case path, pem }

    public init(from decoder: any Decoder) throws {
        try decoder.refuseUnknownKeys(Set(CodingKeys.allCases.map(\.rawValue)))
        let container = try decoder.container(keyedBy: CodingKeys.self)
        path = try container.decodeIfPresent(String.self, forKey: .path)
        pem = try container.decodeIfPresent(String.self, forKey: .pem)
        guard (path == nil) != (pem == nil) else {
            throw DecodingError.dataCorruptedError(forKey: .path, in: container, debugDescription: "give exactly one of path, pem")
        }
    }
}

extension ProviderConfiguration.Alipay {
    enum CodingKeys: String, CodingKey, CaseIterable { case appId, publicKey, publicKeyPath, sellerId, query }

    public init(from decoder: any Decoder) throws {
        try decoder.refuseUnknownKeys(Set(CodingKeys.allCases.map(\.rawValue)))
        let container = try decoder.container(keyedBy: CodingKeys.self)
        appId = try container.decode(String.self, forKey: .appId)
        publicKey = try container.decodeIfPresent(String.self, forKey: .publicKey)
        publicKeyPath = try container.decodeIfPresent(String.self, forKey: .publicKeyPath)
        sellerId = try container.decodeIfPresent(String.self, forKey: .sellerId)
        guard (publicKey == nil) != (publicKeyPath == nil) else {
            throw DecodingError.dataCorruptedError(
                forKey: .publicKey, in: container, debugDescription: "give exactly one of publicKey, publicKeyPath")
        }
        query = try container.decodeIfPresent(ProviderConfiguration.AlipayQuery.self, forKey: .query)
    }
}

extension ProviderConfiguration.AlipayQuery {
    enum CodingKeys: String, CodingKey, CaseIterable { case appPrivateKeyPath, gatewayURL }

    public init(from decoder: any Decoder) throws {
        try decoder.refuseUnknownKeys(Set(CodingKeys.allCases.map(\.rawValue)))
        let container = try decoder.container(keyedBy: CodingKeys.self)
        appPrivateKeyPath = try container.decode(String.self, forKey: .appPrivateKeyPath)
        gatewayURL = try container.decodeHTTPURLIfPresent(forKey: .gatewayURL)
    }
}

extension ProviderConfiguration.WeChatPay {
    enum CodingKeys: String, CodingKey, CaseIterable { case merchantId, apiV3Key, platformKeys, maximumClockSkewSeconds, query }

    public init(from decoder: any Decoder) throws {
        try decoder.refuseUnknownKeys(Set(CodingKeys.allCases.map(\.rawValue)))
        let container = try decoder.container(keyedBy: CodingKeys.self)
        merchantId = try container.decode(String.self, forKey: .merchantId)
        apiV3Key = try container.decode(WeChatPayAPIv3Key.self, forKey: .apiV3Key)
        platformKeys = try container.decode([ProviderConfiguration.PlatformKey].self, forKey: .platformKeys)
        maximumClockSkewSeconds = try container.decodeIfPresent(Double.self, forKey: .maximumClockSkewSeconds)
        if let seconds = maximumClockSkewSeconds, !(0...3_600).contains(seconds) {
            throw DecodingError.dataCorruptedError(
                forKey: .maximumClockSkewSeconds, in: container, debugDescription: "must be 0...3600 seconds")
        }
        query = try container.decodeIfPresent(ProviderConfiguration.WeChatPayQuery.self, forKey: .query)
    }
}

extension ProviderConfiguration.WeChatPayQuery {
    enum CodingKeys: String, CodingKey, CaseIterable { case merchantPrivateKeyPath, merchantCertificateSerial, baseURL }

    public init(from decoder: any Decoder) throws {
        try decoder.refuseUnknownKeys(Set(CodingKeys.allCases.map(\.rawValue)))
        let container = try decoder.container(keyedBy: CodingKeys.self)
        merchantPrivateKeyPath = try container.decode(String.self, forKey: .merchantPrivateKeyPath)
        merchantCertificateSerial = try container.decode(String.self, forKey: .merchantCertificateSerial)
        baseURL = try container.decodeHTTPURLIfPresent(forKey: .baseURL)
    }
}

extension ProviderConfiguration.PlatformKey {
    enum CodingKeys: String, CodingKey, CaseIterable { case serial, pem, path }

    public init(from decoder: any Decoder) throws {
        try decoder.refuseUnknownKeys(Set(CodingKeys.allCases.map(\.rawValue)))
        let container = try decoder.container(keyedBy: CodingKeys.self)
        serial = try container.decode(String.self, forKey: .serial)
        pem = try container.decodeIfPresent(String.self, forKey: .pem)
        path = try container.decodeIfPresent(String.self, forKey: .path)
        guard (path == nil) != (pem == nil) else {
            throw DecodingError.dataCorruptedError(forKey: .pem, in: container, debugDescription: "give exactly one of pem, path")
        }
    }
}
