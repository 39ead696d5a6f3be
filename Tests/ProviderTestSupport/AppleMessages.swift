import Foundation
import LedgerCore
import LedgerProviders
import X509

/// Signed App Store messages of the tests' own CA, signed now (the service checks signedDate against its clock).
public struct AppleMessages: Sendable {
    public let ca: ProviderTestKit.CA
    public var verifiers: ProviderVerifiers { ProviderVerifiers(appStore: ProviderTestKit.verifier(trusting: ca)) }

    public init() throws { ca = try ProviderTestKit.CA() }

    /// A providers configuration file trusting this CA's root, for `ledger serve` and `ledger verify`.
    public func configurationFile(in directory: URL) throws -> URL {
        let url = directory.appendingPathComponent("providers.json")
        let configuration: [String: Any] = ["appStore": [
            "trustedRoots": [["pem": try ca.root.serializeAsPEM().pemString]],
            "apps": [["bundleId": ProviderTestKit.bundleId, "appAppleId": ProviderTestKit.appAppleId,
                      "environments": ["Production", "Sandbox"]]],
        ]]
        try ProviderTestKit.json(configuration).write(to: url)
        return url
    }

    public static func milliseconds(_ date: Date) -> Int64 { Int64(date.timeIntervalSince1970 * 1000) }

    public func transaction(
        orderId: String, transactionId: String = "2000000000000001", productId: String = "gems.100", price: Int64 = 4990,
        environment: String = "Production", signedDate: Date = Date(), revokedAt: Date? = nil, by signer: ProviderTestKit.CA? = nil
    ) throws -> String {
        var payload: [String: Any] = [
            "transactionId": transactionId, "originalTransactionId": transactionId,
            "appAccountToken": AppAccountToken.forOrderId(orderId).uuidString.lowercased(),
            "productId": productId, "bundleId": ProviderTestKit.bundleId,
            "purchaseDate": Self.milliseconds(signedDate.addingTimeInterval(-5)), "price": price, "currency": "USD",
            "environment": environment, "signedDate": Self.milliseconds(signedDate), "type": "Consumable", "quantity": 1,
        ]
        if let revokedAt {
            payload["revocationDate"] = Self.milliseconds(revokedAt)
            payload["revocationReason"] = 0
        }
        return try ProviderTestKit.jws(payload: payload, ca: signer ?? ca)
    }

    public func notification(
        _ type: String, orderId: String, uuid: String = UUID().uuidString.lowercased(), transactionId: String = "2000000000000001",
        price: Int64 = 4990, bundleId: String = ProviderTestKit.bundleId, environment: String = "Production",
        signedDate: Date = Date(), by signer: ProviderTestKit.CA? = nil
    ) throws -> String {
        let signed = try transaction(
            orderId: orderId, transactionId: transactionId, price: price, environment: environment, signedDate: signedDate, by: signer)
        return try ProviderTestKit.jws(payload: [
            "notificationType": type, "notificationUUID": uuid, "version": "2.0",
            "signedDate": Self.milliseconds(signedDate),
            "data": ["bundleId": bundleId, "appAppleId": ProviderTestKit.appAppleId, "environment": environment,
                     "signedTransactionInfo": signed],
        ], ca: signer ?? ca)
    }
}

