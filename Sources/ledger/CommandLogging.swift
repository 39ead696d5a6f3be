import Foundation
import Logging

/// Every command logs to standard error (standard output is for results: tables, JSON, exports), at `LOG_LEVEL`
/// or the command's default.
enum CommandLogging {
    static func bootstrap(defaultLevel: Logger.Level = .warning) {
        let level = ProcessInfo.processInfo.environment["LOG_LEVEL"].flatMap { Logger.Level(rawValue: $0) } ?? defaultLevel
        LoggingSystem.bootstrap { label in
            var handler = StandardErrorLogHandler(StreamLogHandler.standardError(label: label))
            handler.logLevel = level
            return handler
        }
    }
}

/// `StreamLogHandler`, with the logger's metadata kept aside until a message is written. `StreamLogHandler` formats its
/// metadata each time a value is set, and Hummingbird sets a request id on every request's logger: under 16 clients
/// reading histories that formatting was 1.2 % of `serve`'s CPU, for messages below the level that were never written.
/// What is written is the same: the logger's metadata, then the message's own over it, formatted by `StreamLogHandler`.
struct StandardErrorLogHandler: LogHandler {
    private var stream: StreamLogHandler
    var metadata: Logger.Metadata = [:]

    init(_ stream: StreamLogHandler) {
        self.stream = stream
    }

    var logLevel: Logger.Level {
        get { stream.logLevel }
        set { stream.logLevel = newValue }
    }

    var metadataProvider: Logger.MetadataProvider? {
        get { stream.metadataProvider }
        set { stream.metadataProvider = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var event = event
        if !metadata.isEmpty { event.metadata = metadata.merging(event.metadata ?? [:]) { _, own in own } }
        stream.log(event: event)
    }
}
