import PostgresNIO

/// The SQLSTATE of a PostgreSQL error, looking through the transaction wrapper PostgresNIO puts around it.
func sqlState(of error: any Error) -> String? {
    (underlyingError(error) as? PSQLError)?.serverInfo?[.sqlState]
}

/// The error a transaction's body threw, without PostgresNIO's transaction wrapper; a failed `COMMIT` is
/// `CommitUnconfirmed`, whatever PostgreSQL said (the work is not stored, and a retry is safe).
func underlyingError(_ error: any Error) -> any Error {
    guard let transactionError = error as? PostgresTransactionError else { return error }
    if let closureError = transactionError.closureError { return closureError }
    if let commitError = transactionError.commitError { return CommitUnconfirmed(underlying: commitError) }
    return transactionError.beginError ?? error
}

enum SQLStates {
    static let uniqueViolation = "23505"
    static let insufficientPrivilege = "42501"
    static let deadlockDetected = "40P01"
    static let serializationFailure = "40001"
    static let lockNotAvailable = "55P03"
    static let readOnlyTransaction = "25006"
}
