import Foundation
import Logging

/// Every command logs to standard error (standard output is for results: tables, JSON, exports), at `LOG_LEVEL`
/// or the command's default.
enum CommandLogging {
    static func bootstrap(defaultLevel: Logger.Level = .warning) {
        let level = ProcessInfo.processInfo.environment["LOG_LEVEL"].flatMap { Logger.Level(rawValue: $0) } ?? defaultLevel
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
    }
}
