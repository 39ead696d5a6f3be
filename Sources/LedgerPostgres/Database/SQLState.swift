import PostgresNIO

/// The SQLSTATE of a PostgreSQL error.
func sqlState(of error: any Error) -> String? {
    (error as? PSQLError)?.serverInfo?[.sqlState]
}

enum SQLStates {
    static let uniqueViolation = "23505"
    static let insufficientPrivilege = "42501"
    static let deadlockDetected = "40P01"
    static let serializationFailure = "40001"
    static let lockNotAvailable = "55P03"
    static let readOnlyTransaction = "25006"
}
