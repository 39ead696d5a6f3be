import Testing

@testable import LedgerPostgres

@Suite("SQL files split into statements")
struct SQLScriptTests {
    /// Comments stay with the statement they precede; PostgreSQL ignores them.
    @Test func semicolonsInsideQuotesCommentsAndFunctionBodiesDoNotSplit() {
        let sql = """
            -- a comment; with a semicolon
            CREATE TABLE t (a text DEFAULT 'x;y', "odd;name" int);
            /* block; comment */
            CREATE FUNCTION f() RETURNS int LANGUAGE plpgsql AS $body$ BEGIN RETURN 1; END $body$;
            CREATE FUNCTION g() RETURNS text LANGUAGE sql AS $$ SELECT 'it''s;' $$;
            -- trailing comment only
            """
        #expect(SQLScript.statements(sql) == [
            "-- a comment; with a semicolon\nCREATE TABLE t (a text DEFAULT 'x;y', \"odd;name\" int)",
            "/* block; comment */\nCREATE FUNCTION f() RETURNS int LANGUAGE plpgsql AS $body$ BEGIN RETURN 1; END $body$",
            "CREATE FUNCTION g() RETURNS text LANGUAGE sql AS $$ SELECT 'it''s;' $$",
        ])
    }

    @Test func aLastStatementWithoutSemicolonIsKept() {
        #expect(SQLScript.statements("SELECT 1; SELECT $1") == ["SELECT 1", "SELECT $1"])
    }
}
