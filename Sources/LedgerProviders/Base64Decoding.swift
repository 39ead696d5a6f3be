import Foundation

/// Strict base64 decoding for the providers' wire formats, in one place so every verifier refuses the same
/// malformed input the same way (no whitespace, no missing padding in standard base64, no mixed alphabets).
enum Base64Decoding {
    /// Standard base64 (RFC 4648 §4) with padding, as in `x5c` entries, Alipay `sign` and WeChat Pay fields.
    static func standard(_ text: some StringProtocol) -> [UInt8]? {
        guard !text.isEmpty, let data = Data(base64Encoded: String(text)) else { return nil }
        return [UInt8](data)
    }

    /// base64url without padding (RFC 7515 §2), as in each segment of a compact JWS.
    static func url(_ text: some StringProtocol) -> [UInt8]? {
        var standard = ""
        standard.reserveCapacity(text.utf8.count + 3)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "A"..."Z", "a"..."z", "0"..."9": standard.unicodeScalars.append(scalar)
            case "-": standard.append("+")
            case "_": standard.append("/")
            default: return nil
            }
        }
        switch standard.utf8.count % 4 {
        case 0: break
        case 2: standard += "=="
        case 3: standard += "="
        default: return nil
        }
        if standard.isEmpty { return [] }
        guard let data = Data(base64Encoded: standard) else { return nil }
        return [UInt8](data)
    }
}
