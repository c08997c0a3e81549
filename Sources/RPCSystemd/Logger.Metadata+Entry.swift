import Logging

extension Logger.Metadata {
    /// The metadata one log entry carries, by swift-log's rule: the logger's own, overridden by the metadata
    /// provider's, overridden by what the call passed. Both of rpcd's log handlers use it.
    static func entry(logger: Logger.Metadata, provider: Logger.MetadataProvider?, event: Logger.Metadata?) -> Logger.Metadata {
        var all = logger
        if let provided = provider?.get() { all.merge(provided) { $1 } }
        if let event { all.merge(event) { $1 } }
        return all
    }
}
