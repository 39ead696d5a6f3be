import Foundation
import SwiftASN1

/// Builds receipts: ContentInfo → SignedData (version 1, empty digestAlgorithms, encapContentInfo holding the
/// payload, empty signerInfos) → payload `SET OF ReceiptAttribute`.
public enum ReceiptTestKit {
    public static let bundleId = "com.example.app"
    public static let signedData: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 7, 2]
    public static let data: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 7, 1]
    public static let explicitZero = ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific)

    /// The attributes of one in-app purchase, as fields so a test can spoil one.
    public struct Purchase: Sendable {
        public var quantity: Int
        public var productId: String
        public var transactionId: String
        /// The encoded 1703 value, when a test wants something else than a UTF8String of `transactionId`.
        public var transactionIdValue: [UInt8]? = nil
        public var originalTransactionId: String
        public var purchaseDate: String
        public var webOrderLineItemId: Int64?

        public init(
            quantity: Int, productId: String, transactionId: String, transactionIdValue: [UInt8]? = nil,
            originalTransactionId: String, purchaseDate: String, webOrderLineItemId: Int64? = nil
        ) {
            self.quantity = quantity
            self.productId = productId
            self.transactionId = transactionId
            self.transactionIdValue = transactionIdValue
            self.originalTransactionId = originalTransactionId
            self.purchaseDate = purchaseDate
            self.webOrderLineItemId = webOrderLineItemId
        }

        public func attributes() throws -> [[UInt8]] {
            var attributes = [
                try ReceiptTestKit.attribute(1701, ReceiptTestKit.integer(quantity)),
                try ReceiptTestKit.attribute(1702, ReceiptTestKit.utf8(productId)),
                try ReceiptTestKit.attribute(1703, transactionIdValue ?? ReceiptTestKit.utf8(transactionId)),
                try ReceiptTestKit.attribute(1704, ReceiptTestKit.ia5(purchaseDate)),
                try ReceiptTestKit.attribute(1705, ReceiptTestKit.utf8(originalTransactionId)),
                try ReceiptTestKit.attribute(1706, ReceiptTestKit.ia5(purchaseDate)),
            ]
            if let webOrderLineItemId {
                attributes.append(try ReceiptTestKit.attribute(1711, ReceiptTestKit.integer(webOrderLineItemId)))
            }
            return attributes
        }
    }

    public static let first = Purchase(
        quantity: 1, productId: "com.example.coins", transactionId: "1000000000000001",
        originalTransactionId: "1000000000000001", purchaseDate: "2023-11-14T22:13:20Z")
    public static let second = Purchase(
        quantity: 3, productId: "com.example.gems", transactionId: "1000000000000002",
        originalTransactionId: "1000000000000000", purchaseDate: "2023-11-14T22:15:00.500Z",
        webOrderLineItemId: 230_000_000_000_001)

    public static func payload(purchases: [Purchase]) throws -> [UInt8] {
        var attributes = [
            try attribute(0, [0x0C, 0x02, 0x41, 0x42]),
            try attribute(2, utf8(bundleId)),
            try attribute(3, utf8("42")),
        ]
        for purchase in purchases { attributes.append(try attribute(17, set(purchase.attributes()))) }
        attributes.append(try attribute(19, utf8("1.0")))
        return set(attributes)
    }

    public static func der(_ build: (inout DER.Serializer) throws -> Void) rethrows -> [UInt8] {
        var serializer = DER.Serializer()
        try build(&serializer)
        return serializer.serializedBytes
    }

    public static func utf8(_ text: String) throws -> [UInt8] { try der { try $0.serialize(ASN1UTF8String(text)) } }
    public static func ia5(_ text: String) throws -> [UInt8] { try der { try $0.serialize(ASN1IA5String(text)) } }
    public static func integer(_ value: some ASN1IntegerRepresentable) throws -> [UInt8] {
        try der { try $0.serialize(value) }
    }

    /// `SEQUENCE { type, version 1, OCTET STRING value }`.
    public static func attribute(_ type: Int, _ value: [UInt8]) throws -> [UInt8] {
        try der { coder in
            try coder.appendConstructedNode(identifier: .sequence) { coder in
                try coder.serialize(type)
                try coder.serialize(1)
                try coder.serialize(ASN1OctetString(contentBytes: value[...]))
            }
        }
    }

    /// A SET of already-encoded elements, kept in the given order (the parser reads BER, where order is free).
    public static func set(_ elements: [[UInt8]]) -> [UInt8] {
        der { coder in
            coder.appendConstructedNode(identifier: .set) { coder in
                for element in elements { coder.serializeRawBytes(element) }
            }
        }
    }

    /// A definite-length receipt; `payload` nil leaves `eContent` out.
    public static func receipt(
        payload: [UInt8]?, contentType: ASN1ObjectIdentifier = data, outerType: ASN1ObjectIdentifier = signedData
    ) throws -> [UInt8] {
        try der { coder in
            try coder.appendConstructedNode(identifier: .sequence) { coder in
                try coder.serialize(outerType)
                try coder.appendConstructedNode(identifier: explicitZero) { coder in
                    try coder.appendConstructedNode(identifier: .sequence) { coder in
                        try coder.serialize(1)
                        coder.appendConstructedNode(identifier: .set) { _ in }
                        try coder.appendConstructedNode(identifier: .sequence) { coder in
                            try coder.serialize(contentType)
                            if let payload {
                                try coder.appendConstructedNode(identifier: explicitZero) { coder in
                                    try coder.serialize(ASN1OctetString(contentBytes: payload[...]))
                                }
                            }
                        }
                        coder.appendConstructedNode(identifier: .set) { _ in }
                    }
                }
            }
        }
    }

    /// The same receipt as Apple's signers write it: indefinite lengths around the payload, and the `eContent`
    /// octet string split into constructed pieces.
    public static func indefiniteReceipt(payload: [UInt8]) throws -> [UInt8] {
        func indefinite(_ identifier: UInt8, _ content: [UInt8]) -> [UInt8] {
            [identifier, 0x80] + content + [0x00, 0x00]
        }
        let half = payload.count / 2
        let pieces = try der { try $0.serialize(ASN1OctetString(contentBytes: payload[..<half])) }
            + der { try $0.serialize(ASN1OctetString(contentBytes: payload[half...])) }
        let eContent = indefinite(0xA0, indefinite(0x24, pieces))
        let encapsulated = indefinite(0x30, try der { try $0.serialize(data) } + eContent)
        let signed = indefinite(0x30, try der { try $0.serialize(1) } + [0x31, 0x00] + encapsulated + [0x31, 0x00])
        return indefinite(0x30, try der { try $0.serialize(signedData) } + indefinite(0xA0, signed))
    }
}
