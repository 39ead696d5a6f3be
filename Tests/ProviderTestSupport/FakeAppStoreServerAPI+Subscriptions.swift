import Hummingbird
import LedgerCore

/// The stand-in's subscription and refund-request endpoints: Get All Subscription Statuses and Send Consumption
/// Information (v2), answered and checked as Apple documents them; routed by `FakeAppStoreServerAPI.run`.
extension FakeAppStoreServerAPI {
    /// Holds `environment`'s answer to Get All Subscription Statuses about `transactionId`: the last transaction of
    /// one subscription (`status` 1 active … 5 revoked), with its renewal info, each as signed. A second call for the
    /// same subscription replaces its item.
    public func holdStatus(
        of originalTransactionId: String, status: Int64, signedTransaction: String, signedRenewalInfo: String,
        for transactionId: String, in environment: String = "production"
    ) {
        let item: JSONValue = [
            "originalTransactionId": .string(originalTransactionId), "status": .int(status),
            "signedTransactionInfo": .string(signedTransaction), "signedRenewalInfo": .string(signedRenewalInfo),
        ]
        state.withLock { state in
            var items = state.statuses[environment, default: [:]][transactionId] ?? []
            items.removeAll { $0["originalTransactionId"] == .string(originalTransactionId) }
            items.append(item)
            state.statuses[environment, default: [:]][transactionId] = items
        }
    }

    /// Lets `environment` take consumption information about `transactionId` (others are 4040010).
    public func knowConsumable(_ transactionId: String, in environment: String = "production") {
        state.withLock { _ = $0.consumable[environment, default: []].insert(transactionId) }
    }

    /// The consumption answers accepted (202), in order: environment, transaction id, body.
    public var consumptionAnswers: [(environment: String, transactionId: String, body: JSONValue)] {
        state.withLock { $0.consumptionAnswers }
    }

    /// Get All Subscription Statuses: Apple's `StatusResponse`, one subscription group holding every item held for
    /// the transaction; `status` (repeatable, 1…5) filters them, any other value is refused (4000112, as Apple's
    /// "invalid status"). An id that is not digits is refused (4000006); one not held is 4040010.
    func statuses(environment: String, transactionId: String, filter: [String]) -> Response {
        guard !transactionId.isEmpty, transactionId.allSatisfy(\.isASCII), transactionId.allSatisfy(\.isNumber) else {
            return Self.json(.badRequest, ["errorCode": 4_000_006, "errorMessage": "Invalid transaction id."])
        }
        var wanted: Set<Int64> = []
        for value in filter {
            guard let status = Int64(value), (1...5).contains(status) else {
                return Self.json(.badRequest, ["errorCode": 4_000_112, "errorMessage": "Invalid request. The status parameter is invalid."])
            }
            wanted.insert(status)
        }
        guard let items = state.withLock({ $0.statuses[environment]?[transactionId] }) else {
            return Self.json(.notFound, ["errorCode": 4_040_010, "errorMessage": "Transaction id not found."])
        }
        let shown = items.filter { item in
            guard !wanted.isEmpty, case .int(let status)? = item["status"] else { return true }
            return wanted.contains(status)
        }
        return Self.json(.ok, [
            "environment": environment == "sandbox" ? "Sandbox" : "Production", "bundleId": .string(expected.bundleId),
            "appAppleId": .int(ProviderTestKit.appAppleId),
            "data": [["subscriptionGroupIdentifier": "21000001", "lastTransactions": .array(shown)]],
        ])
    }

    /// Send Consumption Information (v2), by Apple's documented rules: a JSON object of `customerConsented` (true,
    /// else 4000035), `sampleContentProvided` (a Boolean, else 4000041), `deliveryStatus` (one of Apple's five, else
    /// 4000036), and optionally `refundPreference` (`DECLINE`, `GRANT_FULL`, `GRANT_PRORATED`) and
    /// `consumptionPercentage` (0…100,000; 0 unless `DELIVERED`); any other member is refused. 202 when taken.
    func consumption(environment: String, transactionId: String, contentType: String?, body: JSONValue?) -> Response {
        func bad(_ code: Int64, _ message: String) -> Response {
            Self.json(.badRequest, ["errorCode": .int(code), "errorMessage": .string(message)])
        }
        guard contentType?.hasPrefix("application/json") == true, case .object(let members)? = body else {
            return bad(4_000_000, "Invalid request. The body is not a JSON object.")
        }
        let allowed: Set<String> = ["customerConsented", "sampleContentProvided", "deliveryStatus", "refundPreference", "consumptionPercentage"]
        if let unknown = members.keys.first(where: { !allowed.contains($0) }) {
            return bad(4_000_000, "Invalid request. Unknown field \(unknown).")
        }
        guard members["customerConsented"] == .bool(true) else { return bad(4_000_035, "Invalid customer consented.") }
        guard case .bool? = members["sampleContentProvided"] else { return bad(4_000_041, "Invalid sample content provided.") }
        let deliveries = ["DELIVERED", "UNDELIVERED_QUALITY_ISSUE", "UNDELIVERED_WRONG_ITEM", "UNDELIVERED_SERVER_OUTAGE", "UNDELIVERED_OTHER"]
        guard case .string(let delivery)? = members["deliveryStatus"], deliveries.contains(delivery) else {
            return bad(4_000_036, "Invalid delivery status.")
        }
        if let preference = members["refundPreference"] {
            guard case .string(let text) = preference, ["DECLINE", "GRANT_FULL", "GRANT_PRORATED"].contains(text) else {
                return bad(4_000_000, "Invalid request. Invalid refund preference.")
            }
        }
        if let percentage = members["consumptionPercentage"] {
            guard case .int(let value) = percentage, (0...100_000).contains(value), delivery == "DELIVERED" || value == 0 else {
                return bad(4_000_000, "Invalid request. Invalid consumption percentage.")
            }
        }
        let known = state.withLock { state -> Bool in
            guard state.consumable[environment]?.contains(transactionId) == true else { return false }
            state.consumptionAnswers.append((environment, transactionId, .object(members)))
            return true
        }
        guard known else { return Self.json(.notFound, ["errorCode": 4_040_010, "errorMessage": "Transaction id not found."]) }
        return Response(status: .accepted)
    }
}
