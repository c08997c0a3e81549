import Logging

extension Logger.Level {
    /// The syslog(3) priority of this level, as journald stores it and modules log (RPCD_LOG_*): swift-log has no
    /// `alert` or `emergency`, and two levels below `info`.
    package var syslogPriority: Int {
        switch self {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }

    /// The level of syslog priority `priority`; anything unknown is treated as info.
    package init(syslogPriority priority: Int) {
        switch priority {
        case ...2: self = .critical
        case 3: self = .error
        case 4: self = .warning
        case 5: self = .notice
        case 7: self = .debug
        default: self = .info
        }
    }
}
