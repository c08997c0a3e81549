import Logging
package import RPCConfig

extension Logger.Level {
    /// rpcd.conf's `LogLevel=` as swift-log's level.
    package init(_ setting: LogLevelSetting) {
        self = Logger.Level(rawValue: setting.rawValue) ?? .info
    }
}
