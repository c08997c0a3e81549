/// A log level as written in configuration: swift-log's level names, lowest first.
///
/// RPCConfig does not depend on swift-log; the daemon maps these one-to-one onto
/// `Logger.Level` (`Logger.Level(rawValue: setting.rawValue)` works, the names are the same).
package enum LogLevelSetting: String, CaseIterable, Hashable, Sendable {
    case trace
    case debug
    case info
    case notice
    case warning
    case error
    case critical
}
