import Foundation
import LedgerProviders
import LedgerTestSupport
import ProviderTestSupport
import SwiftASN1
import Testing

/// The legacy App Store receipt parser, against receipts the tests build themselves with swift-asn1's serializer.
@Suite("App Store: legacy receipt")
struct AppReceiptTests {
    typealias Kit = ReceiptTestKit

    func refusal(_ parse: () throws(AppReceiptError) -> AppReceipt) -> AppReceiptError? {
        do { _ = try parse(); return nil } catch { return error }
    }

    @Test func twoPurchasesGiveTheirIdsAndTheBundleId() throws {
        let der = try Kit.receipt(payload: Kit.payload(purchases: [Kit.first, Kit.second]))
        let receipt = try AppReceipt.parse(base64: Data(der).base64EncodedString())
        #expect(receipt.bundleId == Kit.bundleId)
        #expect(receipt.appVersion == "42")
        #expect(receipt.transactionIds == ["1000000000000001", "1000000000000002"])
        #expect(receipt.inAppPurchases.map(\.productId) == ["com.example.coins", "com.example.gems"])
        #expect(receipt.inAppPurchases.map(\.originalTransactionId) == ["1000000000000001", "1000000000000000"])
        #expect(receipt.inAppPurchases.map(\.quantity) == [1, 3])
        try #require(receipt.inAppPurchases.count == 2)
        #expect(receipt.inAppPurchases[0].purchaseDate == Date(timeIntervalSince1970: 1_700_000_000))
        #expect(receipt.inAppPurchases[1].purchaseDate == Date(timeIntervalSince1970: 1_700_000_100.5))
        #expect(receipt.inAppPurchases[1].webOrderLineItemId == 230_000_000_000_001)
        #expect(try AppReceipt.parse(der: der) == receipt)
    }

    @Test func transactionIdsAreDistinctInReceiptOrder() throws {
        var again = Kit.first
        again.productId = "com.example.coins.again"
        let der = try Kit.receipt(payload: Kit.payload(purchases: [Kit.second, Kit.first, again]))
        let receipt = try AppReceipt.parse(der: der)
        #expect(receipt.inAppPurchases.count == 3)
        #expect(receipt.transactionIds == ["1000000000000002", "1000000000000001"])
    }

    @Test func aReceiptWithoutAttribute17SaysSoPlainly() throws {
        let der = try Kit.receipt(payload: Kit.payload(purchases: []))
        let error = refusal { () throws(AppReceiptError) in try AppReceipt.parse(der: der) }
        #expect(error == .noInAppPurchases)
        #expect(error?.description == "the receipt lists no in-app purchase (in_app is empty): a receipt refreshed "
            + "with SKReceiptRefreshRequest, or read before the purchase finished; this says nothing about whether "
            + "the order was paid")
    }

    @Test func theIndefiniteLengthBERWrapperOfRealReceiptsIsRead() throws {
        let der = try Kit.receipt(payload: Kit.payload(purchases: [Kit.first, Kit.second]))
        let ber = try Kit.indefiniteReceipt(payload: Kit.payload(purchases: [Kit.first, Kit.second]))
        #expect(ber != der)
        #expect(try AppReceipt.parse(der: ber) == AppReceipt.parse(der: der))
    }

    @Test(arguments: ["", "not base64!", "AAAA AAAA", "QUJD\n", "QUJ"])
    func notBase64IsRefused(_ text: String) {
        #expect(refusal { () throws(AppReceiptError) in try AppReceipt.parse(base64: text) } == .notBase64)
    }

    @Test func base64OverTheLimitIsRefusedBeforeDecoding() {
        let text = String(repeating: "A", count: AppReceipt.maximumBase64Length + 4)
        #expect(refusal { () throws(AppReceiptError) in try AppReceipt.parse(base64: text) }
            == .tooLarge(bytes: AppReceipt.maximumBase64Length + 4, limit: AppReceipt.maximumBase64Length))
    }

    @Test func notPKCS7IsRefused() throws {
        let payload = try Kit.payload(purchases: [Kit.first])
        let envelopedData: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 7, 3]
        let enveloped = try Kit.receipt(payload: payload, outerType: envelopedData)
        for der in [payload, [0x04, 0x01, 0x00], [0x30, 0x00], Array("hello".utf8), enveloped] {
            let error = refusal { () throws(AppReceiptError) in try AppReceipt.parse(der: der) }
            guard case .notPKCS7? = error else {
                Issue.record("\(der.prefix(8)): \(String(describing: error))")
                continue
            }
        }
    }

    @Test func aWrongEncapsulatedContentTypeIsRefused() throws {
        let digestedData: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 7, 5]
        let der = try Kit.receipt(payload: Kit.payload(purchases: [Kit.first]), contentType: digestedData)
        #expect(refusal { () throws(AppReceiptError) in try AppReceipt.parse(der: der) }
            == .notPKCS7("encapsulated content type 1.2.840.113549.1.7.5, not data (1.2.840.113549.1.7.1)"))
    }

    @Test func aSignedDataWithoutContentHasNoPayload() throws {
        let der = try Kit.receipt(payload: nil)
        #expect(refusal { () throws(AppReceiptError) in try AppReceipt.parse(der: der) } == .noPayload)
    }

    @Test func aPayloadThatIsNotASetOfAttributesIsRefused() throws {
        let der = try Kit.receipt(payload: Kit.utf8("not a set"))
        guard case .malformedPayload? = refusal({ () throws(AppReceiptError) in try AppReceipt.parse(der: der) }) else {
            Issue.record("accepted or wrong error"); return
        }
    }

    @Test func everyPrefixOfAValidReceiptIsRefused() throws {
        let der = try Kit.receipt(payload: Kit.payload(purchases: [Kit.first, Kit.second]))
        for length in 0..<der.count {
            let error = refusal { () throws(AppReceiptError) in try AppReceipt.parse(der: Array(der.prefix(length))) }
            #expect(error != nil, "a prefix of \(length) of \(der.count) bytes was accepted")
        }
    }

    @Test func anAttribute17ThatIsNotASetIsRefused() throws {
        let payload = try Kit.set([
            Kit.attribute(2, Kit.utf8(Kit.bundleId)),
            Kit.attribute(17, Kit.utf8("1000000000000001")),
        ])
        let der = try Kit.receipt(payload: payload)
        let error = refusal { () throws(AppReceiptError) in try AppReceipt.parse(der: der) }
        #expect(error == .malformedAttribute(type: 17, reason: "in-app purchase 1: not a SET OF ReceiptAttribute"))
    }

    @Test func aTransactionIdThatIsNotAUTF8StringIsRefused() throws {
        var purchase = Kit.first
        purchase.transactionIdValue = try Kit.ia5("1000000000000001")
        let der = try Kit.receipt(payload: Kit.payload(purchases: [Kit.second, purchase]))
        #expect(refusal { () throws(AppReceiptError) in try AppReceipt.parse(der: der) }
            == .malformedAttribute(type: 1703, reason: "in-app purchase 2: not a UTF8String"))
    }

    @Test func aPurchaseWithoutATransactionIdIsRefused() throws {
        let purchase = try Kit.set([Kit.attribute(1702, Kit.utf8("p")), Kit.attribute(1705, Kit.utf8("1"))])
        let der = try Kit.receipt(payload: Kit.set([Kit.attribute(17, purchase)]))
        #expect(refusal { () throws(AppReceiptError) in try AppReceipt.parse(der: der) }
            == .malformedAttribute(type: 1703, reason: "missing from in-app purchase 1"))
    }

    @Test func aTransactionIdGivenTwiceIsRefused() throws {
        let purchase = try Kit.set([
            Kit.attribute(1702, Kit.utf8("p")), Kit.attribute(1703, Kit.utf8("1")), Kit.attribute(1703, Kit.utf8("2")),
            Kit.attribute(1705, Kit.utf8("1")),
        ])
        let der = try Kit.receipt(payload: Kit.set([Kit.attribute(17, purchase)]))
        #expect(refusal { () throws(AppReceiptError) in try AppReceipt.parse(der: der) }
            == .malformedAttribute(type: 1703, reason: "given twice in in-app purchase 1"))
    }

    @Test func unknownAttributesAreSkippedEvenWhenNotDER() throws {
        let purchase = try Kit.set(Kit.first.attributes() + [Kit.attribute(1799, [0xFF, 0x00, 0x13])])
        let payload = try Kit.set([
            Kit.attribute(2, Kit.utf8(Kit.bundleId)), Kit.attribute(99, [0x80]), Kit.attribute(17, purchase),
        ])
        #expect(try AppReceipt.parse(der: Kit.receipt(payload: payload)).transactionIds == ["1000000000000001"])
    }

    /// Random bytes, random byte flips of a valid receipt and random truncations: each ends in a value or an error.
    @Test func randomInputsNeverTrap() throws {
        var random = SeededRandom(seed: 0x5EED_2024)
        let valid = try Kit.receipt(payload: Kit.payload(purchases: [Kit.first, Kit.second]))
        var refused = 0
        for round in 0..<600 {
            var bytes: [UInt8]
            switch round % 3 {
            case 0: bytes = (0..<Int(random.next() % 512)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            case 1:
                bytes = valid
                for _ in 0...(random.next() % 4) {
                    bytes[Int(random.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: random.next())
                }
            default:
                bytes = valid
                let start = Int(random.next() % UInt64(bytes.count))
                bytes.removeSubrange(start..<Swift.min(bytes.count, start + 1 + Int(random.next() % 16)))
            }
            if refusal({ () throws(AppReceiptError) in try AppReceipt.parse(der: bytes) }) != nil { refused += 1 }
            let base64 = Data(bytes).base64EncodedString()
            _ = refusal { () throws(AppReceiptError) in try AppReceipt.parse(base64: base64) }
        }
        #expect(refused > 300)
    }
}
