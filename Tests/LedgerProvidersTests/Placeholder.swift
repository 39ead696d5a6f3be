import Testing
@testable import LedgerProviders
