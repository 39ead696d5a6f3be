/// The numbered SQL files of this directory, embedded in the binary so `ledger` migrates from any directory.
/// A new migration is a new file here plus a line below and in Package.swift; a test checks the three agree.
public enum LedgerSchema {
    public static let files: [(name: String, sql: String)] = [
        ("001_events.sql", String(decoding: PackageResources._01_events_sql, as: UTF8.self)),
        ("002_orders.sql", String(decoding: PackageResources._02_orders_sql, as: UTF8.self)),
        ("003_tokens.sql", String(decoding: PackageResources._03_tokens_sql, as: UTF8.self)),
        ("004_audit.sql", String(decoding: PackageResources._04_audit_sql, as: UTF8.self)),
        ("005_finance.sql", String(decoding: PackageResources._05_finance_sql, as: UTF8.self)),
        ("006_service_role.sql", String(decoding: PackageResources._06_service_role_sql, as: UTF8.self)),
        ("007_stream_head.sql", String(decoding: PackageResources._07_stream_head_sql, as: UTF8.self)),
        ("008_append_guard.sql", String(decoding: PackageResources._08_append_guard_sql, as: UTF8.self)),
        ("009_token_epoch.sql", String(decoding: PackageResources._09_token_epoch_sql, as: UTF8.self)),
        ("010_provider_messages.sql", String(decoding: PackageResources._10_provider_messages_sql, as: UTF8.self)),
        ("011_refusals_by_order.sql", String(decoding: PackageResources._11_refusals_by_order_sql, as: UTF8.self)),
        ("012_refused_provider_facts.sql", String(decoding: PackageResources._12_refused_provider_facts_sql, as: UTF8.self)),
        ("013_token_rotation.sql", String(decoding: PackageResources._13_token_rotation_sql, as: UTF8.self)),
        ("014_recovery.sql", String(decoding: PackageResources._14_recovery_sql, as: UTF8.self)),
        ("015_token_rotation_by_caller.sql", String(decoding: PackageResources._15_token_rotation_by_caller_sql, as: UTF8.self)),
        ("016_recorded_not_applied.sql", String(decoding: PackageResources._16_recorded_not_applied_sql, as: UTF8.self)),
        ("017_recovery_answers.sql", String(decoding: PackageResources._17_recovery_answers_sql, as: UTF8.self)),
        ("018_sweep_pages.sql", String(decoding: PackageResources._18_sweep_pages_sql, as: UTF8.self)),
        ("019_unclaimed_receipt_purchases.sql", String(decoding: PackageResources._19_unclaimed_receipt_purchases_sql, as: UTF8.self)),
        ("020_feed_horizon.sql", String(decoding: PackageResources._20_feed_horizon_sql, as: UTF8.self)),
        ("021_stream_kinds.sql", String(decoding: PackageResources._21_stream_kinds_sql, as: UTF8.self)),
        ("022_feed_consumers.sql", String(decoding: PackageResources._22_feed_consumers_sql, as: UTF8.self)),
        ("023_subscriptions.sql", String(decoding: PackageResources._23_subscriptions_sql, as: UTF8.self)),
        ("024_subscription_claims.sql", String(decoding: PackageResources._24_subscription_claims_sql, as: UTF8.self)),
        ("025_subscription_money.sql", String(decoding: PackageResources._25_subscription_money_sql, as: UTF8.self)),
        ("026_subscription_grants.sql", String(decoding: PackageResources._26_subscription_grants_sql, as: UTF8.self)),
        ("027_subscription_questions.sql", String(decoding: PackageResources._27_subscription_questions_sql, as: UTF8.self)),
        ("028_consumption_answers.sql", String(decoding: PackageResources._28_consumption_answers_sql, as: UTF8.self)),
    ]
}
