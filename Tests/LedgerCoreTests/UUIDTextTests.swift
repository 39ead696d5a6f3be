import Foundation
import LedgerCore
import Testing

@Suite struct UUIDTextTests {
    @Test func aUUIDsTextInEitherCaseReadsAsFoundationReadsIt() throws {
        #expect(UUID(text: "00010203-0405-0607-0809-0a0b0c0d0eFF")
            == UUID(uuid: (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 255)))
        for _ in 0..<1_000 {
            let uuid = UUID()
            #expect(UUID(text: uuid.uuidString) == uuid)
            #expect(UUID(text: uuid.lowercasedText) == uuid)
        }
    }

    @Test func textThatIsNotAUUIDsIsRefused() {
        let good = "4b4ade76-7b8c-4dbc-bbd6-e5f8dc06e9ed"
        #expect(UUID(text: good) != nil)
        for bad in [
            "", "4b4ade76-7b8c-4dbc-bbd6-e5f8dc06e9e", good + "0", " " + good.dropFirst(),
            "4b4ade76-7b8c-4dbc-bbd6_e5f8dc06e9ed",  // a dash missing
            "4b4ade767-b8c-4dbc-bbd6-e5f8dc06e9ed",  // a dash misplaced
            "4b4ade76-7b8c-4dbc-bbd6-e5f8dc06e9eg",  // not a hex digit
            "+b4ade76-7b8c-4dbc-bbd6-e5f8dc06e9ed",  // a sign, which sscanf takes
            "4b4ade76-7b8c-4dbc-bbd6-e5f8dc06e9é",  // 36 bytes, not 36 digits
            "4b4ade767b8c4dbcbbd6e5f8dc06e9ed0000",  // no dashes
        ] {
            #expect(UUID(text: bad) == nil, "\(bad)")
        }
    }
}
