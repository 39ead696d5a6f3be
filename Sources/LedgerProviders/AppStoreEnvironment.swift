/// The App Store environment a signed message says it comes from. Kept as a closed set so a message from an
/// environment the ledger has never heard of is refused rather than treated like one it knows.
public enum AppStoreEnvironment: String, Sendable, Hashable, Codable, CaseIterable {
    case production = "Production"
    case sandbox = "Sandbox"
    /// StoreKit Testing in Xcode: signed locally, never real money.
    case xcode = "Xcode"
    /// Local StoreKit testing outside Xcode: never real money.
    case localTesting = "LocalTesting"

    /// Environments whose transactions are made up on a developer's machine.
    public var isLocalTesting: Bool { self == .xcode || self == .localTesting }
}

/// One app whose App Store messages the ledger accepts: a message naming another bundle id, or an environment
/// the app is not configured for, is refused even when Apple signed it (Apple signs every app's messages).
public struct AppStoreApp: Sendable, Hashable {
    /// The app's bundle id (`data.bundleId` / `bundleId` must equal it).
    public var bundleId: String
    /// The app's Apple id; required to accept `Production` notifications, whose `data.appAppleId` must equal it.
    public var appAppleId: Int64?
    /// The environments accepted among `Production` and `Sandbox`.
    public var environments: Set<AppStoreEnvironment>
    /// Whether `Xcode` and `LocalTesting` messages are accepted. Off by default: they are not real purchases,
    /// and they are signed by Xcode's local certificate, which must then also be among the trusted roots.
    public var allowXcode: Bool

    public init(bundleId: String, appAppleId: Int64?, environments: Set<AppStoreEnvironment>, allowXcode: Bool = false) {
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.environments = environments
        self.allowXcode = allowXcode
    }

    /// Whether a message from `environment` is accepted: `Xcode`/`LocalTesting` only with `allowXcode`
    /// (whatever `environments` says), the others when listed in `environments`.
    public func accepts(_ environment: AppStoreEnvironment) -> Bool {
        environment.isLocalTesting ? allowXcode : environments.contains(environment)
    }
}
