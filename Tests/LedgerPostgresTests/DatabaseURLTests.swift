import Foundation
@testable import LedgerPostgres
import Testing

/// `DATABASE_URL` as libpq reads it: one server or several, a socket, no user; which servers a session may use.
@Suite struct DatabaseURLTests {
    @Test func oneServerIsUsedAsItIs() throws {
        let database = try Database(url: "postgres://ledger:s%40cret@db.internal:6543/ledger")
        #expect(database.configuration.host == "db.internal")
        #expect(database.configuration.port == 6543)
        #expect(database.configuration.username == "ledger")
        #expect(database.configuration.password == "s@cret")
        #expect(database.configuration.database == "ledger")
        #expect(database.servers == nil)
        #expect(database.target == "ledger@db.internal:6543/ledger")
    }

    /// The URL `pg_autoctl show uri` prints: several servers, no user, its own query parameters.
    @Test func severalServersAreSearchedForTheWritableOne() throws {
        let url = "postgres://127.0.0.1:55401,127.0.0.1:55402/ledger?target_session_attrs=read-write&sslmode=prefer"
        let database = try Database(url: url, environment: ["PGUSER": "ledger_service"])
        let servers = try #require(database.servers)
        #expect(servers.addresses == [.tcp(host: "127.0.0.1", port: 55401), .tcp(host: "127.0.0.1", port: 55402)])
        #expect(servers.target == .readWrite)
        #expect(database.configuration.username == "ledger_service")
        #expect(database.target == "ledger_service@127.0.0.1:55401,127.0.0.1:55402/ledger (read-write)")
    }

    /// Each of several servers gets a short connect timeout: a dead machine's server answers nothing, and the next
    /// is tried only after it. `connect_timeout` sets it, as in libpq.
    @Test func aConnectionToEachOfSeveralServersIsBoundedInTime() throws {
        #expect(try Database(url: "postgres://u@h/x").configuration.options.connectTimeout == .seconds(10))
        #expect(try Database(url: "postgres://u@h1,h2/x").configuration.options.connectTimeout == Database.severalServersConnectTimeout)
        #expect(try Database(url: "postgres://u@h1,h2/x?connect_timeout=7").configuration.options.connectTimeout == .seconds(7))
        #expect(throws: DatabaseURLError.self) { try Database(url: "postgres://u@h1,h2/x?connect_timeout=0") }
    }

    @Test func addressesTakeDefaultPortsAndIPv6Brackets() throws {
        let database = try Database(url: "postgresql://u@[::1]:5433,db2,db3:5434/x")
        let servers = try #require(database.servers)
        #expect(servers.addresses == [.tcp(host: "::1", port: 5433), .tcp(host: "db2", port: 5432), .tcp(host: "db3", port: 5434)])
        // Without target_session_attrs, several servers are searched for the default (read-write for DATABASE_URL).
        #expect(servers.target == .readWrite)
        #expect(try Database(url: "postgres://u@a,b/x", defaultTarget: .preferStandby).servers?.target == .preferStandby)
    }

    @Test func socketsMayBeSeveralWithAPortEach() throws {
        let database = try Database(url: "postgres://postgres@/ledger?host=/run/a,/run/b&port=5432,5433&target_session_attrs=primary")
        let servers = try #require(database.servers)
        #expect(servers.addresses == [.socket(path: "/run/a/.s.PGSQL.5432"), .socket(path: "/run/b/.s.PGSQL.5433")])
        #expect(servers.target == .primary)
        let one = try Database(url: "postgres://postgres@/ledger?host=/run/a")
        #expect(one.configuration.unixSocketPath == "/run/a/.s.PGSQL.5432")
        #expect(one.servers == nil)
    }

    @Test(arguments: [
        "mysql://u@h/x", "postgres://u@h:99999/x", "postgres://u@h:port/x", "postgres://u@h1,,h2/x", "postgres://u@/x?host=/a,/b&port=1,2,3",
        "postgres://u@[::1/x",
    ])
    func malformedURLsAreRefused(url: String) {
        #expect(throws: DatabaseURLError.self) { try Database(url: url) }
    }

    @Test func anUnknownTargetIsRefusedByName() throws {
        let error = #expect(throws: DatabaseURLError.self) { try Database(url: "postgres://u@h/x?target_session_attrs=writable") }
        #expect(error?.description.contains("target_session_attrs=writable is not one of any, read-write") == true)
    }

    /// The ledger writes: `serve` and the commands refuse a DATABASE_URL whose servers would not lead it to the
    /// writable one, where a session on a standby would fail every write.
    @Test func theLedgersURLMustFindTheWritableServer() throws {
        let error = #expect(throws: DatabaseURLError.self) {
            try Database.resolve(url: "postgres://u@h1,h2/x?target_session_attrs=prefer-standby", environment: [:])
        }
        #expect(error?.description.contains("use target_session_attrs=read-write") == true)
        let resolved = try Database.resolve(url: "postgres://u@h1,h2/x", environment: [:], poolSize: 12).database
        #expect(resolved.servers?.target == .readWrite)
        #expect(resolved.configuration.options.maximumConnections == 12)
    }
}

extension DatabaseServers: Equatable {
    public static func == (left: DatabaseServers, right: DatabaseServers) -> Bool {
        left.addresses == right.addresses && left.target == right.target
    }
}
