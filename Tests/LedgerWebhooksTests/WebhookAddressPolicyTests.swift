import Foundation
@testable import LedgerWebhooks
import Testing

/// Where a webhook may go: public addresses; loopback, link-local and private ones only when allowed; a name judged by
/// the addresses it resolves to.
@Suite("Webhooks: the address policy")
struct WebhookAddressPolicyTests {
    @Test func loopbackLinkLocalAndPrivateAddressesAreRefused() async throws {
        let strict = WebhookAddressPolicy.strict
        for refused in [
            "127.0.0.1", "127.8.9.10", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254",
            "100.64.0.1", "0.0.0.0", "224.0.0.1", "::1", "::", "fe80::1", "fd00::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1",
        ] {
            await #expect(throws: WebhookAddressPolicy.RefusedAddress.self, "\(refused)") {
                _ = try await strict.address(for: refused, port: 443)
            }
        }
        for allowed in ["93.184.216.34", "172.32.0.1", "8.8.8.8", "2606:4700::1111", "::ffff:8.8.8.8"] {
            #expect(try await strict.address(for: allowed, port: 443) == IPAddress(allowed), "\(allowed)")
        }
    }

    /// Checked after resolution: `localhost` is 127.0.0.1.
    @Test func aNameThatResolvesToLoopbackIsRefusedToo() async throws {
        await #expect(throws: WebhookAddressPolicy.RefusedAddress.self) {
            _ = try await WebhookAddressPolicy.strict.address(for: "localhost", port: 80)
        }
        let byHost = try WebhookAddressPolicy(allow: ["LocalHost"])
        #expect(try await byHost.address(for: "localhost", port: 80).bytes.count > 0)
        let byRange = try WebhookAddressPolicy(allow: ["127.0.0.0/8", "::1"])
        #expect(try await byRange.address(for: "127.0.0.1", port: 80) == IPAddress("127.0.0.1"))
        await #expect(throws: WebhookAddressPolicy.RefusedAddress.self) { _ = try await byRange.address(for: "10.0.0.1", port: 80) }
    }

    @Test func aMalformedAllowEntryIsRefused() {
        #expect(throws: WebhookAddressPolicy.InvalidAllowEntry.self) { try WebhookAddressPolicy(allow: ["10.0.0.0/33"]) }
        #expect(throws: WebhookAddressPolicy.InvalidAllowEntry.self) { try WebhookAddressPolicy(allow: ["hooks/8"]) }
    }

    @Test func rangesContainWhatTheirPrefixSays() throws {
        let range = try #require(IPAddressRange("172.16.0.0/12"))
        #expect(range.contains(try #require(IPAddress("172.20.1.1"))))
        #expect(!range.contains(try #require(IPAddress("172.32.0.0"))))
        #expect(try #require(IPAddressRange("fe80::/10")).contains(try #require(IPAddress("febf::1"))))
        #expect(!(try #require(IPAddressRange("fe80::/10")).contains(try #require(IPAddress("fec0::1")))))
        #expect(IPAddressRange("10.0.0.0/-1") == nil && IPAddressRange("nonsense") == nil)
    }
}
