/// The ledger's rule for ids (order, account, product, transaction): 1–128 characters of `[A-Za-z0-9._:-]`,
/// so ids are safe in URLs, logs and CSV files without escaping.
public enum Identifier {
    public static let rule = "must be 1–128 characters of A–Z, a–z, 0–9, '.', '_', ':' or '-'"

    /// An order's id is also a path segment of the API: not dots alone, which are a path's own names
    /// (`/v1/orders/../events` reached an order named `..`). Only new orders are held to it; ids inside event data
    /// keep the rule they were stored under, so that every stored event still reads back.
    public static let orderRule = rule + ", not dots alone"

    public static func isValidOrderId(_ text: String) -> Bool {
        isValid(text) && !text.utf8.everyByte { $0 == UInt8(ascii: ".") }
    }

    public static func isValid(_ text: String) -> Bool {
        let bytes = text.utf8
        return (1...128).contains(bytes.count) && bytes.everyByte { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: ":"), UInt8(ascii: "-"):
                true
            default:
                false
            }
        }
    }
}
