import Crypto
import Foundation

/// Reads the members of one JSON object of event data, refusing unknown members and naming the field in
/// every refusal. `null` reads as absent.
struct DataFields {
    /// The object's members, in their order: a list, not a dictionary — an event's data has a few, and finding one by
    /// comparing names costs less than hashing them (every stored event is read through here).
    /// Unlabelled, as the parser gives them: a list of labelled pairs would be a copy of it.
    let members: [(String, JSONValue)]
    /// Where this object sits, e.g. `data` or `data.amount`.
    let path: String

    /// Which rules a value is read by: those for a new event, or the loosest any stored event was written under.
    enum Rules {
        case new, stored
    }
    let rules: Rules

    /// `owner` names what the object is in the unknown-field message ("order.created", "an amount").
    init(_ value: JSONValue, path: String, owner: String, allowing allowed: [String], rules: Rules) throws(EventValidationError) {
        guard case .object(let members) = value else { throw Self.notAnObject(path) }
        try self.init(members: members.map { ($0.key, $0.value) }, path: path, owner: owner, allowing: allowed, rules: rules)
    }

    /// An object's members as the parser read them (`JSONParser.parseMembers`). `allowed` is a list, not a set: it
    /// has a few names, and comparing a member's name with each costs less than hashing it.
    init(members: [(String, JSONValue)], path: String, owner: String, allowing allowed: [String], rules: Rules)
        throws(EventValidationError)
    {
        // Checked without gathering the unknown members: a stored event read back has none.
        if members.contains(where: { !allowed.contains($0.0) }),
            let first = members.map(\.0).filter({ !allowed.contains($0) })
                .min(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) })
        {
            throw .invalidField(field: "\(path).\(first)", message: "\(path).\(first) is not a field of \(owner)")
        }
        self.members = members
        self.path = path
        self.rules = rules
    }

    static func notAnObject(_ path: String) -> EventValidationError {
        .invalidField(field: path, message: "\(path) must be a JSON object")
    }

    func name(_ key: String) -> String { "\(path).\(key)" }

    func refuse(_ key: String, _ rule: String) -> EventValidationError {
        .invalidField(field: name(key), message: "\(name(key)) \(rule)")
    }

    func value(_ key: String) -> JSONValue? {
        guard let value = members.first(where: { $0.0 == key })?.1, value != .null else { return nil }
        return value
    }

    /// Turns an absent optional into a refusal.
    func required<Value>(
        _ key: String, _ read: (String) throws(EventValidationError) -> Value?
    ) throws(EventValidationError) -> Value {
        guard let value = try read(key) else { throw refuse(key, "is required") }
        return value
    }

    // MARK: Scalars

    func string(_ key: String) throws(EventValidationError) -> String? {
        guard let value = value(key) else { return nil }
        guard case .string(let text) = value else { throw refuse(key, "must be a string") }
        // PostgreSQL cannot store NUL in text or jsonb, and no legitimate id or message holds one.
        guard text.utf8.everyByte({ $0 != 0 }) else { throw refuse(key, "must not contain NUL characters") }
        return text
    }

    /// A string of `length` characters, counted as Unicode scalars (not as what a font draws: "a" followed by 50,000
    /// combining accents is one grapheme, and 50,001 characters here); `printable` also refuses control characters.
    func text(_ key: String, length: ClosedRange<Int>, printable: Bool = false) throws(EventValidationError) -> String? {
        guard let text = try string(key) else { return nil }
        // Stored events were held to what a font draws as one character (graphemes, never more than scalars).
        guard length.contains(rules == .new ? text.unicodeScalars.count : text.count) else {
            throw refuse(key, "must be \(length.lowerBound) to \(length.upperBound) characters long")
        }
        if printable, text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            throw refuse(key, "must not contain control characters")
        }
        return text
    }

    /// An id of the ledger's id alphabet (see `Identifier`).
    func id(_ key: String) throws(EventValidationError) -> String? {
        guard let text = try string(key) else { return nil }
        guard Identifier.isValid(text) else { throw refuse(key, Identifier.rule) }
        return text
    }

    /// An integer in `range`; `rule` says what is expected when it is not (a fraction such as 1.5 is not).
    func integer(_ key: String, in range: ClosedRange<Int64>, rule: String? = nil) throws(EventValidationError) -> Int64? {
        guard let value = value(key) else { return nil }
        guard case .int(let number) = value, range.contains(number) else {
            throw refuse(key, rule ?? "must be an integer from \(range.lowerBound) to \(range.upperBound)")
        }
        return number
    }

    /// A quantity of items: 1 to 1000, 1 when absent.
    func quantity(_ key: String) throws(EventValidationError) -> Int {
        Int(try integer(key, in: 1...1000) ?? 1)
    }

    func bool(_ key: String) throws(EventValidationError) -> Bool? {
        guard let value = value(key) else { return nil }
        guard case .bool(let flag) = value else { throw refuse(key, "must be true or false") }
        return flag
    }

    func choice<Choice: RawRepresentable<String> & CaseIterable>(
        _ key: String, _ type: Choice.Type
    ) throws(EventValidationError) -> Choice? {
        guard let text = try string(key) else { return nil }
        guard let choice = Choice(rawValue: text) else {
            throw refuse(key, "must be one of " + Choice.allCases.map(\.rawValue).joined(separator: ", "))
        }
        return choice
    }

    func uuid(_ key: String) throws(EventValidationError) -> UUID? {
        guard let text = try string(key) else { return nil }
        guard let uuid = UUID(text: text) else { throw refuse(key, "must be a UUID") }
        return uuid
    }

    func time(_ key: String) throws(EventValidationError) -> Date? {
        guard let text = try string(key) else { return nil }
        guard let date = EventTime.parse(text) else {
            throw refuse(key, "must be an RFC 3339 time with an offset, e.g. 2026-11-22T13:05:09Z")
        }
        return date
    }

    // MARK: Composites

    private static let moneyFieldNames = ["value", "currency"]

    /// `{"value": minor units from 0 to `Money.maximumValue`, "currency": "USD"}`.
    func money(_ key: String) throws(EventValidationError) -> Money? {
        guard let value = value(key) else { return nil }
        let money = try DataFields(value, path: name(key), owner: "an amount", allowing: Self.moneyFieldNames, rules: rules)
        // Amounts were unbounded before `Money.maximumValue`: a stored one reads back whatever it is.
        let maximum = rules == .new ? Money.maximumValue : Int64.max
        let minorUnits = try money.required("value") { key throws(EventValidationError) in
            try money.integer(key, in: 0...maximum, rule: "must be a whole number of minor units from 0 to \(maximum)")
        }
        let currency = try money.required("currency", money.string)
        guard currency.utf8.count == 3, currency.utf8.everyByte({ (65...90).contains($0) }) else {
            throw money.refuse("currency", "must be 3 upper-case letters (ISO 4217)")
        }
        return Money(value: minorUnits, currency: currency)
    }

    private static let unconvertedPriceFieldNames = ["milliunits", "quantity", "currency"]

    /// `{"milliunits": any integer, "quantity": any integer, "currency": "USD"}`: a price as a provider stated it,
    /// which is not in whole minor units (`UnconvertedPrice`).
    func unconvertedPrice(_ key: String) throws(EventValidationError) -> UnconvertedPrice? {
        guard let value = value(key) else { return nil }
        let price = try DataFields(
            value, path: name(key), owner: "a price", allowing: Self.unconvertedPriceFieldNames, rules: rules)
        let milliunits = try price.required("milliunits") { key throws(EventValidationError) in try price.integer(key, in: .min ... .max) }
        let quantity = try price.required("quantity") { key throws(EventValidationError) in try price.integer(key, in: .min ... .max) }
        let currency = try price.required("currency", price.string)
        guard currency.utf8.count == 3, currency.utf8.everyByte({ (65...90).contains($0) }) else {
            throw price.refuse("currency", "must be 3 upper-case letters (ISO 4217)")
        }
        return UnconvertedPrice(milliunits: milliunits, quantity: quantity, currency: currency)
    }

    /// Any JSON object, free of NUL characters (which PostgreSQL's jsonb refuses).
    func object(_ key: String) throws(EventValidationError) -> JSONValue? {
        guard let value = value(key) else { return nil }
        guard case .object = value else { throw refuse(key, "must be a JSON object") }
        guard !Self.containsNul(value) else { throw refuse(key, "must not contain NUL characters") }
        return value
    }

    private static func containsNul(_ value: JSONValue) -> Bool {
        switch value {
        case .string(let text): text.unicodeScalars.contains("\u{0}")
        case .array(let elements): elements.contains(where: containsNul)
        case .object(let members): members.contains { $0.key.unicodeScalars.contains("\u{0}") || containsNul($0.value) }
        case .null, .bool, .int, .double: false
        }
    }

    /// The SHA-256 of a receipt, from the receipt itself (`receipt`) or as given (`receiptSha256`), never both.
    func receiptSha256() throws(EventValidationError) -> String? {
        let receipt = try string("receipt")
        let given = try string("receiptSha256")
        if let receipt {
            guard given == nil else {
                throw refuse("receipt", "and \(name("receiptSha256")) cannot both be given: the ledger keeps only the receipt's SHA-256")
            }
            guard (1...65_536).contains(receipt.utf8.count) else {
                throw refuse("receipt", "must be 1 to 65536 bytes of UTF-8")
            }
            return Array(SHA256.hash(data: Data(receipt.utf8))).hex
        }
        guard let given else { return nil }
        let isHex = given.utf8.count == 64 && given.utf8.everyByte { byte in
            (48...57).contains(byte) || (97...102).contains(byte) || (65...70).contains(byte)
        }
        guard isHex else { throw refuse("receiptSha256", "must be 64 hexadecimal digits (a SHA-256)") }
        // Lower case is how the ledger writes a hash: most arrive so, and need no copy.
        return given.utf8.everyByte({ !(65...70).contains($0) }) ? given : given.lowercased()
    }
}
