import Foundation
import LedgerCore
@testable import LedgerPostgres

/// Small builders for store-level tests: the store does not care what the events mean.
enum StoreFixtures {
    static func event(_ type: String = "test.happened", _ payload: Int = 0, id: UUID = UUID()) -> NewEvent {
        NewEvent(eventId: id, type: type, data: .object(["n": .int(Int64(payload))]), metadata: .object(["actor": "test"]))
    }

    static func orderId(_ label: String = "order") -> String {
        "\(label)-\(UUID().uuidString.prefix(8))"
    }
}
