import Foundation

/// Turns a `DecodingError` into the dotted path of the field it is about (`data.bundleId`, `apps[1].environments`),
/// so a refusal or a configuration error names the field rather than printing Foundation's prose.
enum DecodingErrorField {
    static func path(of error: any Error) -> String {
        guard let decodingError = error as? DecodingError else { return "(document)" }
        switch decodingError {
        case .keyNotFound(let key, let context):
            return render(context.codingPath + [key])
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
            return render(context.codingPath)
        @unknown default:
            return "(document)"
        }
    }

    /// A short reason for a `DecodingError`, without the value itself (it may be a secret).
    static func reason(of error: any Error) -> String {
        guard let decodingError = error as? DecodingError else { return "not valid JSON" }
        switch decodingError {
        case .keyNotFound: return "missing"
        case .typeMismatch(let type, _): return "expected \(type)"
        case .valueNotFound(let type, _): return "expected \(type), found null"
        case .dataCorrupted(let context): return context.codingPath.isEmpty ? "not valid JSON" : context.debugDescription
        @unknown default: return "invalid"
        }
    }

    static func render(_ path: [any CodingKey]) -> String {
        var text = ""
        for key in path {
            if let index = key.intValue {
                text += "[\(index)]"
            } else {
                text += text.isEmpty ? key.stringValue : ".\(key.stringValue)"
            }
        }
        return text.isEmpty ? "(document)" : text
    }
}
