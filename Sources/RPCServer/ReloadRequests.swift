import RPCJSON
package import RPCProtocol

/// Where reloads are asked for, by SIGHUP or by `rpcd.reload`: the daemon's reload service installs the code
/// that reloads (`serve`), and reloads run one at a time, in the order asked. Whoever asks waits for the outcome
/// of its own reload, so `systemctl reload` (which runs `rpcctl reload`) returns once the reload is over and
/// fails when it failed.
///
/// Reloads asked for while nothing serves them (before start, after `stop()`) fail at once.
package actor ReloadRequests {
    /// How a reload ended: the services now served and the handlers it refused (each of whose previous
    /// instance keeps serving, or whose service is unavailable), or why the previous configuration keeps
    /// serving as a whole.
    package enum Outcome: Sendable, Equatable {
        case reloaded(services: [String], refused: [RPCHandlerRefusal] = [])
        case failed(String)
    }

    private var perform: (@Sendable () async -> Outcome)?
    /// The reload asked for last; the next one starts after it.
    private var last: Task<Outcome, Never>?

    package init() {}

    package func serve(_ perform: @escaping @Sendable () async -> Outcome) {
        self.perform = perform
    }

    /// No more reloads: the daemon is stopping. One already running finishes.
    package func stop() {
        perform = nil
    }

    /// Runs a reload after any asked for before it, and returns its outcome.
    package func reload() async -> Outcome {
        guard let perform else { return .failed("rpcd is not running reloads (starting or stopping)") }
        let previous = last
        let reload = Task {
            _ = await previous?.value
            return await perform()
        }
        last = reload
        return await reload.value
    }
}

extension ReloadRequests.Outcome {
    /// `rpcd.reload`'s answer: the services now served and the handlers refused (a reload that refused one
    /// changed the rest, so it is no error: `rpcctl reload` fails on a non-empty `refused`), or -32013 with the
    /// reason in `data.detail` when nothing changed.
    func result() throws(RPCError) -> JSONValue {
        switch self {
        case .reloaded(let services, let refused):
            return ["services": .array(services.map { .string($0) }), "refused": .array(refused.map(\.json))]
        case .failed(let reason):
            throw .reloadFailed(reason)
        }
    }
}
