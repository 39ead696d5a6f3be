import Foundation

/// Where an endpoint's deliveries are sent: an `http` or `https` URL with a host, and no user or password in it (a
/// URL is listed and logged; a credential in it would be too). Where its host leads is checked at each delivery, on
/// the address connected to (`LedgerWebhooks`' address policy), not here: a name may resolve elsewhere tomorrow.
public struct WebhookEndpointURL: Sendable, Hashable, CustomStringConvertible {
    public let url: URL
    public let host: String
    public let isSecure: Bool

    public static let maximumLength = 2_048

    public init(_ text: String) throws(InvalidWebhookURL) {
        guard text.utf8.count <= Self.maximumLength else { throw InvalidWebhookURL(reason: "is longer than \(Self.maximumLength) bytes") }
        guard let components = URLComponents(string: text), let url = components.url else {
            throw InvalidWebhookURL(reason: "is not a URL")
        }
        guard let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            throw InvalidWebhookURL(reason: "must be http or https")
        }
        guard let host = components.host, !host.isEmpty else { throw InvalidWebhookURL(reason: "has no host") }
        guard components.user == nil, components.password == nil else {
            throw InvalidWebhookURL(reason: "may not carry a user or a password")
        }
        guard components.fragment == nil else { throw InvalidWebhookURL(reason: "may not have a fragment") }
        self.url = url
        self.host = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        self.isSecure = scheme == "https"
    }

    public var description: String { url.absoluteString }
}

public struct InvalidWebhookURL: Error, CustomStringConvertible {
    public let reason: String
    public var description: String { "url \(reason)" }
}
