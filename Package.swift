// swift-tools-version:6.2
import PackageDescription

let package = Package(
    name: "OrderLedger",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "ledger", targets: ["ledger"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
    ],
    targets: [
        // The domain: event types, the order state machine, folds. Pure: Foundation and hashing only.
        .target(
            name: "LedgerCore",
            dependencies: [.product(name: "Crypto", package: "swift-crypto")]
        ),
        // The SQL, embedded in the binary so `ledger` works from any directory.
        .target(
            name: "LedgerSchema",
            path: "schema",
            resources: [
                .embedInCode("001_events.sql"),
                .embedInCode("002_orders.sql"),
                .embedInCode("003_tokens.sql"),
                .embedInCode("004_audit.sql"),
                .embedInCode("005_finance.sql"),
                .embedInCode("006_service_role.sql"),
                .embedInCode("007_stream_head.sql"),
                .embedInCode("008_append_guard.sql"),
                .embedInCode("009_token_epoch.sql"),
                .embedInCode("010_provider_messages.sql"),
                .embedInCode("011_refusals_by_order.sql"),
                .embedInCode("012_refused_provider_facts.sql"),
                .embedInCode("013_token_rotation.sql"),
                .embedInCode("014_recovery.sql"),
                .embedInCode("015_token_rotation_by_caller.sql"),
                .embedInCode("016_recorded_not_applied.sql"),
                .embedInCode("017_recovery_answers.sql"),
                .embedInCode("018_sweep_pages.sql"),
                .embedInCode("019_unclaimed_receipt_purchases.sql"),
                .embedInCode("020_feed_horizon.sql"),
                .embedInCode("021_stream_kinds.sql"),
                .embedInCode("022_feed_consumers.sql"),
                .embedInCode("023_subscriptions.sql"),
                .embedInCode("024_subscription_claims.sql"),
                .embedInCode("025_subscription_money.sql"),
                .embedInCode("026_subscription_grants.sql"),
                .embedInCode("027_subscription_questions.sql"),
                .embedInCode("028_consumption_answers.sql"),
                .embedInCode("029_webhooks.sql"),
            ]
        ),
        .target(
            name: "LedgerPostgres",
            dependencies: [
                "LedgerCore", "LedgerSchema",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The console's HTML, CSS and JavaScript, embedded: served by LedgerHTTP at /console/.
        .target(
            name: "LedgerConsole",
            resources: [.embedInCode("Assets/index.html"), .embedInCode("Assets/console.css"), .embedInCode("Assets/console.js")]
        ),
        .target(
            name: "LedgerHTTP",
            dependencies: [
                "LedgerCore", "LedgerPostgres", "LedgerProviders", "LedgerRecovery", "LedgerConsole",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            resources: [.embedInCode("openapi.yaml")]
        ),
        // Verifies and decodes the payment providers' signed messages (App Store JWS, Alipay, WeChat Pay).
        // Pure: bytes and configuration in, typed values or a typed error out; no database, no HTTP framework.
        .target(
            name: "LedgerProviders",
            dependencies: [
                "LedgerCore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ]
        ),
        // Asks the providers (App Store Server API): outbound HTTPS, every base URL configurable. Pure of the
        // database: what it gets is signed, and verified by LedgerProviders before anything is recorded.
        .target(
            name: "LedgerProviderClients",
            dependencies: [
                "LedgerCore", "LedgerProviders",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        // Recovers lost orders (补单): the schedule's rounds and a person's question, asking through
        // LedgerProviderClients and recording through LedgerPostgres's front door.
        .target(
            name: "LedgerRecovery",
            dependencies: [
                "LedgerCore", "LedgerPostgres", "LedgerProviders", "LedgerProviderClients",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ]
        ),
        // Sends webhooks: what the queue of LedgerPostgres holds, signed, to each endpoint, retried by the plan.
        .target(
            name: "LedgerWebhooks",
            dependencies: [
                "LedgerCore", "LedgerPostgres",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .executableTarget(
            name: "ledger",
            dependencies: [
                "LedgerCore", "LedgerPostgres", "LedgerHTTP", "LedgerProviders", "LedgerProviderClients", "LedgerRecovery",
                "LedgerWebhooks",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(name: "LedgerCoreTests", dependencies: ["LedgerCore", "LedgerTestSupport"]),
        // Certificate authorities, keys and signed messages of the tests' own making, shared by the provider tests.
        .target(
            name: "ProviderTestSupport",
            dependencies: [
                "LedgerProviders", "LedgerCore",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            path: "Tests/ProviderTestSupport"
        ),
        .testTarget(
            name: "LedgerProviderClientsTests",
            dependencies: [
                "LedgerProviderClients", "LedgerProviders", "LedgerCore", "ProviderTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .testTarget(
            name: "LedgerRecoveryTests",
            dependencies: [
                "LedgerRecovery", "LedgerPostgres", "LedgerProviderClients", "LedgerProviders", "LedgerCore",
                "LedgerTestSupport", "ProviderTestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
        .testTarget(
            name: "LedgerProvidersTests",
            dependencies: [
                "LedgerProviders", "LedgerCore", "ProviderTestSupport", "LedgerTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ]
        ),
        // Starts the test cluster and hands each test a fresh migrated database.
        .target(
            name: "LedgerTestSupport",
            dependencies: [
                "LedgerPostgres", "LedgerCore",
                .product(name: "PostgresNIO", package: "postgres-nio"), .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/LedgerTestSupport"
        ),
        .testTarget(
            name: "LedgerPostgresTests",
            dependencies: ["LedgerPostgres", "LedgerCore", "LedgerTestSupport"]
        ),
        .testTarget(
            name: "LedgerHTTPTests",
            dependencies: [
                "LedgerHTTP", "LedgerPostgres", "LedgerCore", "LedgerTestSupport", "LedgerProviders", "ProviderTestSupport",
                "LedgerProviderClients", "LedgerRecovery",
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
            ]
        ),
        .testTarget(
            name: "LedgerWebhooksTests",
            dependencies: [
                "LedgerWebhooks", "LedgerPostgres", "LedgerCore", "LedgerTestSupport", "ProviderTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Drives the built `ledger` binary, as a user would.
        .testTarget(
            name: "LedgerCLITests",
            dependencies: [
                "ledger", "LedgerHTTP", "LedgerPostgres", "LedgerCore", "LedgerTestSupport", "ProviderTestSupport", "LedgerProviders",
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
