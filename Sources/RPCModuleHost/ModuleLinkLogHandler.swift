import Logging
import NIOCore
import RPCLogging
import RPCModuleLink

/// In a module host process: sends every log entry over the link, where rpcd logs it with the handler's
/// logger (its journal fields, its level). The host itself never writes to the journal or a terminal.
struct ModuleLinkLogHandler: LogHandler {
    let channel: any Channel
    var metadata: Logger.Metadata = [:]
    /// rpcd filters by its own run-time level; the host sends what a module logs at debug and above.
    var logLevel: Logger.Level = .debug

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        let fields = merged.map { ModuleLinkMessage.LogEntryField(name: $0.key, value: "\($0.value)") }
        channel.writeAndFlush(
            [ModuleLinkMessage.log(level: UInt8(event.level.syslogPriority), message: "\(event.message)", fields: fields)],
            promise: nil)
    }
}
