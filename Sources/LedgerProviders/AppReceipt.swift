import Foundation
import SwiftASN1

/// Apple's legacy App Store receipt (the base64 `receiptData` older iOS clients send), read only for what the
/// ledger asks Apple about: the in-app transaction ids, with the bundle and product ids beside them.
///
/// The receipt's PKCS#7 signature is deliberately not checked here. Nothing read from a receipt is recorded as a
/// fact: its transaction ids are only questions put to Apple's App Store Server API, whose signed answer is
/// verified on its own (`AppStoreJWSVerifier`). A forged receipt can at most make the ledger ask about a
/// transaction that Apple then does not vouch for. Parsing is therefore lenient where leniency costs nothing
/// (BER for every layer: real receipts wrap the payload in indefinite lengths, and a SET OF need not be sorted)
/// and strict about the fields it reads: a documented field of the wrong type refuses the receipt.
///
/// Format: Apple's "Receipt Fields" / "Validating receipts on the device". A CMS `ContentInfo` (signedData) whose
/// `encapContentInfo` (data) holds an `eContent` OCTET STRING; its content is a `SET OF ReceiptAttribute`,
/// `ReceiptAttribute ::= SEQUENCE { type INTEGER, version INTEGER, value OCTET STRING }`.
public struct AppReceipt: Sendable, Hashable {
    /// Attribute 2, the app's bundle id (nil: absent).
    public var bundleId: String?
    /// Attribute 3, the app's version (`CFBundleVersion`) when the receipt was made (nil: absent).
    public var appVersion: String?
    /// Attribute 17, one entry per purchase, in receipt order. Never empty: a receipt without one is refused with
    /// ``AppReceiptError/noInAppPurchases``.
    public var inAppPurchases: [InAppPurchase]

    /// One in-app purchase (one attribute 17): the content of its own `SET OF ReceiptAttribute`.
    public struct InAppPurchase: Sendable, Hashable {
        /// 1702 `product_identifier`.
        public var productId: String
        /// 1703 `transaction_identifier`: what the ledger asks the App Store Server API about.
        public var transactionId: String
        /// 1705 `original_transaction_identifier`: the first purchase of a restored or renewed product.
        public var originalTransactionId: String
        /// 1704 `purchase_date` (RFC 3339; nil: absent or empty).
        public var purchaseDate: Date?
        /// 1701 `quantity` (nil: absent).
        public var quantity: Int?
        /// 1711 `web_order_line_item_id`, subscriptions only (nil: absent).
        public var webOrderLineItemId: Int64?

        public init(
            productId: String, transactionId: String, originalTransactionId: String, purchaseDate: Date? = nil,
            quantity: Int? = nil, webOrderLineItemId: Int64? = nil
        ) {
            self.productId = productId
            self.transactionId = transactionId
            self.originalTransactionId = originalTransactionId
            self.purchaseDate = purchaseDate
            self.quantity = quantity
            self.webOrderLineItemId = webOrderLineItemId
        }
    }

    /// The purchases' transaction ids, each once, in receipt order: the questions to put to Apple.
    public var transactionIds: [String] {
        var seen: Set<String> = []
        return inAppPurchases.map(\.transactionId).filter { seen.insert($0).inserted }
    }

    /// The longest base64 accepted. Real receipts are a few KiB to a few hundred KiB; past this it is not one.
    public static let maximumBase64Length = 4 * 1024 * 1024
    /// The most bytes accepted by ``parse(der:)``: what ``maximumBase64Length`` characters of base64 decode to.
    public static let maximumDERLength = maximumBase64Length / 4 * 3

    /// Reads a receipt as the client sends it: standard base64 with padding, no whitespace (`Base64Decoding`).
    public static func parse(base64: String) throws(AppReceiptError) -> AppReceipt {
        guard base64.utf8.count <= maximumBase64Length else {
            throw .tooLarge(bytes: base64.utf8.count, limit: maximumBase64Length)
        }
        guard let der = Base64Decoding.standard(base64) else { throw .notBase64 }
        return try parse(der: der)
    }

    /// Reads a receipt's bytes (BER or DER). Every malformed input is a thrown ``AppReceiptError``, never a trap.
    public static func parse(der: [UInt8]) throws(AppReceiptError) -> AppReceipt {
        guard der.count <= maximumDERLength else { throw .tooLarge(bytes: der.count, limit: maximumDERLength) }
        let payload = try ReceiptEnvelope.payload(of: der)
        return try ReceiptPayload.receipt(from: payload)
    }
}

/// Why a receipt was refused. ``noInAppPurchases`` is not a malformed receipt but an empty one, kept apart so that no
/// caller mistakes it for "not paid".
public enum AppReceiptError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Not standard base64 (RFC 4648 §4, padded, no whitespace), or empty.
    case notBase64
    /// More than the limit (`bytes` counts base64 characters or DER bytes, as given).
    case tooLarge(bytes: Int, limit: Int)
    /// Not a PKCS#7 / CMS `ContentInfo` holding `SignedData` over `data`; the reason names the layer.
    case notPKCS7(String)
    /// `SignedData` holds no content (`eContent` absent or empty): a detached signature, not a receipt.
    case noPayload
    /// The content is not a `SET OF ReceiptAttribute`; the reason says where.
    case malformedPayload(String)
    /// Attribute `type` (2, 3, 17, or inside an in-app purchase 1701...1711) is missing, repeated or of the wrong
    /// form.
    case malformedAttribute(type: Int, reason: String)
    /// A well-formed receipt with no attribute 17 (`in_app` is empty). Apple leaves it empty in a receipt refreshed
    /// with `SKReceiptRefreshRequest`, and in one read before the purchase finished. It says nothing about whether an
    /// order was paid: ask Apple by transaction id, or wait for the server notification.
    case noInAppPurchases

    public var description: String {
        switch self {
        case .notBase64: "not_base64"
        case .tooLarge(let bytes, let limit): "too_large (\(bytes), limit \(limit))"
        case .notPKCS7(let reason): "not_pkcs7 (\(reason))"
        case .noPayload: "no_payload"
        case .malformedPayload(let reason): "malformed_payload (\(reason))"
        case .malformedAttribute(let type, let reason): "malformed_attribute (\(type): \(reason))"
        case .noInAppPurchases:
            "the receipt lists no in-app purchase (in_app is empty): a receipt refreshed with SKReceiptRefreshRequest, "
                + "or read before the purchase finished; this says nothing about whether the order was paid"
        }
    }
}

/// The layers around the payload: `ContentInfo` → `SignedData` → `encapContentInfo` → `eContent`. Only what leads
/// to the payload is read; certificates and signer infos are skipped, since the signature is not ours to check.
enum ReceiptEnvelope {
    static let signedData: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 7, 2]
    static let data: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 7, 1]
    static let explicitZero = ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific)

    static func payload(of der: [UInt8]) throws(AppReceiptError) -> ArraySlice<UInt8> {
        let root: ASN1Node
        do { root = try BER.parse(der) } catch { throw .notPKCS7("not one ASN.1 element") }
        guard var contentInfo = ASN1Walk.children(of: root, .sequence) else {
            throw .notPKCS7("ContentInfo is not a SEQUENCE")
        }
        let contentType = try objectIdentifier(contentInfo.next(), naming: "ContentInfo.contentType")
        guard contentType == signedData else {
            throw .notPKCS7("content type \(contentType), not signedData (1.2.840.113549.1.7.2)")
        }
        guard var content = ASN1Walk.children(of: contentInfo.next(), explicitZero),
              var signed = ASN1Walk.children(of: content.next(), .sequence)
        else { throw .notPKCS7("ContentInfo.content is not [0] SignedData") }
        guard ASN1Walk.isInteger(signed.next()) else { throw .notPKCS7("SignedData.version is not an INTEGER") }
        guard ASN1Walk.children(of: signed.next(), .set) != nil else {
            throw .notPKCS7("SignedData.digestAlgorithms is not a SET")
        }
        guard var encapsulated = ASN1Walk.children(of: signed.next(), .sequence) else {
            throw .notPKCS7("SignedData.encapContentInfo is not a SEQUENCE")
        }
        let eContentType = try objectIdentifier(encapsulated.next(), naming: "encapContentInfo.eContentType")
        guard eContentType == data else {
            throw .notPKCS7("encapsulated content type \(eContentType), not data (1.2.840.113549.1.7.1)")
        }
        return try eContent(encapsulated.next())
    }

    /// `eContent [0] EXPLICIT OCTET STRING OPTIONAL`; BER may split the octet string into constructed pieces.
    static func eContent(_ node: ASN1Node?) throws(AppReceiptError) -> ArraySlice<UInt8> {
        guard let node else { throw .noPayload }
        guard var tagged = ASN1Walk.children(of: node, explicitZero), let octets = tagged.next() else {
            throw .notPKCS7("encapContentInfo.eContent is not [0] OCTET STRING")
        }
        let payload: ASN1OctetString
        do { payload = try ASN1OctetString(berEncoded: octets) } catch {
            throw .notPKCS7("encapContentInfo.eContent is not an OCTET STRING")
        }
        guard !payload.bytes.isEmpty else { throw .noPayload }
        return payload.bytes
    }

    static func objectIdentifier(
        _ node: ASN1Node?, naming field: String
    ) throws(AppReceiptError) -> ASN1ObjectIdentifier {
        guard let node, let identifier = try? ASN1ObjectIdentifier(berEncoded: node) else {
            throw .notPKCS7("\(field) is not an OBJECT IDENTIFIER")
        }
        return identifier
    }
}

/// The payload: a `SET OF ReceiptAttribute`, at the top and again inside each attribute 17. Attribute types the
/// ledger does not read are skipped unparsed: Apple adds undocumented ones whose values are not always DER.
enum ReceiptPayload {
    struct Attribute {
        let type: Int
        let value: ArraySlice<UInt8>
    }

    static func receipt(from payload: ArraySlice<UInt8>) throws(AppReceiptError) -> AppReceipt {
        let attributes = try ReceiptPayload.attributes(in: payload) { reason in .malformedPayload(reason) }
        var bundleId: String?
        var appVersion: String?
        var purchases: [AppReceipt.InAppPurchase] = []
        for attribute in attributes {
            switch attribute.type {
            case 2: try setOnce(&bundleId, utf8String(attribute, "receipt"), attribute, "receipt")
            case 3: try setOnce(&appVersion, utf8String(attribute, "receipt"), attribute, "receipt")
            case 17: purchases.append(try inAppPurchase(attribute.value, number: purchases.count + 1))
            default: continue
            }
        }
        guard !purchases.isEmpty else { throw .noInAppPurchases }
        return AppReceipt(bundleId: bundleId, appVersion: appVersion, inAppPurchases: purchases)
    }

    /// One attribute 17: its value is itself a `SET OF ReceiptAttribute`. `number` counts from 1, for messages.
    static func inAppPurchase(
        _ value: ArraySlice<UInt8>, number: Int
    ) throws(AppReceiptError) -> AppReceipt.InAppPurchase {
        let context = "in-app purchase \(number)"
        let attributes = try ReceiptPayload.attributes(in: value) { reason in
            .malformedAttribute(type: 17, reason: "\(context): \(reason)")
        }
        var productId: String?
        var transactionId: String?
        var originalTransactionId: String?
        var purchaseDate: Date??  // outer nil: absent; inner nil: given empty
        var quantity: Int?
        var webOrderLineItemId: Int64?
        for attribute in attributes {
            switch attribute.type {
            case 1701: try setOnce(&quantity, integer(attribute, context), attribute, context)
            case 1702: try setOnce(&productId, utf8String(attribute, context), attribute, context)
            case 1703: try setOnce(&transactionId, utf8String(attribute, context), attribute, context)
            case 1704: try setOnce(&purchaseDate, date(attribute, context), attribute, context)
            case 1705: try setOnce(&originalTransactionId, utf8String(attribute, context), attribute, context)
            case 1711: try setOnce(&webOrderLineItemId, integer(attribute, context), attribute, context)
            default: continue
            }
        }
        // Apple documents all three in every in-app purchase; without one, these bytes are not Apple's receipt.
        guard let productId else { throw .malformedAttribute(type: 1702, reason: "missing from \(context)") }
        guard let transactionId else { throw .malformedAttribute(type: 1703, reason: "missing from \(context)") }
        guard let originalTransactionId else {
            throw .malformedAttribute(type: 1705, reason: "missing from \(context)")
        }
        return AppReceipt.InAppPurchase(
            productId: productId, transactionId: transactionId, originalTransactionId: originalTransactionId,
            purchaseDate: purchaseDate ?? nil, quantity: quantity, webOrderLineItemId: webOrderLineItemId)
    }

    /// `SET OF SEQUENCE { type INTEGER, version INTEGER, value OCTET STRING }`, in the order the bytes give.
    /// `malformed` turns a reason into the error for this level (payload, or an in-app purchase).
    static func attributes(
        in bytes: ArraySlice<UInt8>, malformed: (String) -> AppReceiptError
    ) throws(AppReceiptError) -> [Attribute] {
        guard let root = try? BER.parse(bytes) else { throw malformed("not one ASN.1 element") }
        guard var elements = ASN1Walk.children(of: root, .set) else { throw malformed("not a SET OF ReceiptAttribute") }
        var attributes: [Attribute] = []
        var index = 0
        while let element = elements.next() {
            index += 1
            guard var fields = ASN1Walk.children(of: element, .sequence),
                  let typeNode = fields.next(), let type = try? Int(berEncoded: typeNode),
                  ASN1Walk.isInteger(fields.next()),
                  let valueNode = fields.next(), let value = try? ASN1OctetString(berEncoded: valueNode),
                  fields.next() == nil
            else { throw malformed("element \(index) is not SEQUENCE { INTEGER, INTEGER, OCTET STRING }") }
            attributes.append(Attribute(type: type, value: value.bytes))
        }
        return attributes
    }

    /// A documented field given twice is refused rather than guessed between: which transaction would it be?
    static func setOnce<T>(
        _ slot: inout T?, _ value: T, _ attribute: Attribute, _ context: String
    ) throws(AppReceiptError) {
        guard slot == nil else { throw .malformedAttribute(type: attribute.type, reason: "given twice in \(context)") }
        slot = value
    }

    /// A value that is one DER UTF8String holding valid UTF-8.
    static func utf8String(_ attribute: Attribute, _ context: String) throws(AppReceiptError) -> String {
        guard let node = try? BER.parse(attribute.value), let string = try? ASN1UTF8String(berEncoded: node),
              let text = String(validating: string.bytes, as: UTF8.self)
        else { throw .malformedAttribute(type: attribute.type, reason: "\(context): not a UTF8String") }
        return text
    }

    /// A value that is one INTEGER fitting `T`.
    static func integer<T: ASN1IntegerRepresentable & FixedWidthInteger>(
        _ attribute: Attribute, _ context: String
    ) throws(AppReceiptError) -> T {
        guard let node = try? BER.parse(attribute.value), let value = try? T(berEncoded: node) else {
            throw .malformedAttribute(type: attribute.type, reason: "\(context): not an INTEGER that fits \(T.self)")
        }
        return value
    }

    /// A value that is one IA5String holding an RFC 3339 date, with or without fractional seconds; empty is nil.
    static func date(_ attribute: Attribute, _ context: String) throws(AppReceiptError) -> Date? {
        guard let node = try? BER.parse(attribute.value), let string = try? ASN1IA5String(berEncoded: node) else {
            throw .malformedAttribute(type: attribute.type, reason: "\(context): not an IA5String")
        }
        let text = String(string)
        if text.isEmpty { return nil }
        let plain = Date.ISO8601FormatStyle()
        let fractional = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
        guard let date = (try? plain.parse(text)) ?? (try? fractional.parse(text)) else {
            throw .malformedAttribute(type: attribute.type, reason: "\(context): \(text) is not an RFC 3339 date")
        }
        return date
    }
}

/// Small questions about parsed nodes, answered without throwing.
enum ASN1Walk {
    /// The children of a constructed node with this identifier; nil for anything else (absent, primitive, other tag).
    static func children(of node: ASN1Node?, _ identifier: ASN1Identifier) -> ASN1NodeCollection.Iterator? {
        guard let node, node.identifier == identifier, case .constructed(let nodes) = node.content else { return nil }
        return nodes.makeIterator()
    }

    static func isInteger(_ node: ASN1Node?) -> Bool {
        guard let node, node.identifier == .integer, case .primitive(let bytes) = node.content else { return false }
        return !bytes.isEmpty
    }
}
