import Foundation
@testable import LedgerPostgres
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The commands the embedded cluster runs (`pg_ctl`, `initdb`) start with standard input, output and error only: a
/// server started by `pg_ctl` would otherwise hold every descriptor of ours without close-on-exec, and a test process
/// with hundreds of sessions open left a restarted standby too few to start.
@Suite("Embedded cluster: commands inherit no descriptor of ours")
struct ChildProcessTests {
    @Test func aDescriptorWithoutCloseOnExecIsNotInherited() throws {
        let descriptor = open("/dev/null", O_RDONLY)  // no O_CLOEXEC
        try #require(descriptor > 2)
        defer { close(descriptor) }
        let seen = try ChildProcess.run(
            ["/bin/sh", "-c", "if [ -e /proc/self/fd/\(descriptor) ]; then echo inherited; else echo closed; fi"])
        #expect(seen.status == 0)
        #expect(seen.output.trimmingCharacters(in: .whitespacesAndNewlines) == "closed")
    }
}
