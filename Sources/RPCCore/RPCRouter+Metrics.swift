import RPCJSON
import RPCMetrics
import Synchronization

extension RPCRouter {
    /// The states a handler's module host reports (`RPCServiceStatusReporting`): each is a series of
    /// `rpcd_handler_up`, 1 for the current one and 0 for the others, so a change shows as a step and the label
    /// values stay these five.
    static let handlerStates = ["starting", "running", "restarting", "failed", "stopping"]

    /// Exports what the services that report a status (isolated handlers) say, read at each scrape from the
    /// registry served then: no series for a handler until it is configured.
    func exportHandlers(to metrics: RPCMetrics) {
        let exported = Mutex<[String: (restarts: RPCCounter, crashes: RPCCounter, counted: (Int, Int))]>([:])
        metrics.addCollector { [weak self] metrics in
            guard let self else { return }
            for service in registry.services {
                guard let reporting = service as? any RPCServiceStatusReporting,
                      case .object(let status) = reporting.status else { continue }
                let name = service.descriptor.name
                let state = status["state"]?.stringValue.map { String($0.prefix { $0 != ":" }) } ?? ""
                for candidate in Self.handlerStates {
                    metrics.gauge(.handlerUp, [name, candidate]).set(to: candidate == state ? 1 : 0)
                }
                let restarts = status["restarts"]?.intValue ?? 0
                let crashes = status["crashes"]?.intValue ?? 0
                exported.withLock { exported in
                    var entry = exported[name] ?? (
                        metrics.counter(.handlerRestarts, [name]),
                        metrics.counter(.handlerCrashes, [name]), (0, 0))
                    // A reloaded handler starts counting again: only growth is added.
                    if restarts > entry.counted.0 { entry.restarts.increment(by: restarts - entry.counted.0) }
                    if crashes > entry.counted.1 { entry.crashes.increment(by: crashes - entry.counted.1) }
                    entry.counted = (restarts, crashes)
                    exported[name] = entry
                }
            }
        }
    }
}
