import CRPCDHostSupport
import NIOCore
import NIOPosix
import RPCModuleLink

#if canImport(Glibc)
import Glibc
#endif

/// One running module host process, by pid; rpcd's end of its link is a NIO channel on a socketpair
/// (`attach`).
///
/// rpcd never waits on it on an event loop: the link is non-blocking, and the process is reaped (`waitpid`)
/// on a thread of NIO's blocking pool once its link has closed. Spawning is one `posix_spawn` (vfork and
/// exec: well under a millisecond), so it may run on an event loop. Thread-safe.
struct ModuleHostProcess: Sendable {
    let pid: pid_t

    /// Starts `executable` with one end of a new socketpair as its descriptor 3; returns the process and the
    /// other end, which `attach` takes over.
    static func spawn(executable: String, arguments: [String]) throws(ModuleHostSpawnError) -> (ModuleHostProcess, Int32) {
        var ends: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
            throw ModuleHostSpawnError(executable: executable, errno: errno)
        }
        var pid: pid_t = 0
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup($0) } + [nil]
        defer { for string in argv + envp { free(string) } }
        let result = rpcd_spawn_module_host(executable, argv, envp, ends[1], &pid)
        close(ends[1])
        guard result == 0 else {
            close(ends[0])
            throw ModuleHostSpawnError(executable: executable, errno: result)
        }
        return (ModuleHostProcess(pid: pid), ends[0])
    }

    /// rpcd's environment, without Swift's crash backtracer: a module crash is answered when the host is gone,
    /// and symbolicating a backtrace first takes seconds. (The signal is logged; a core dump, where the system
    /// keeps them, shows the rest.)
    private static var environment: [String] {
        var entries: [String] = []
        var pointer = environ
        while let entry = pointer.pointee {
            let text = String(cString: entry)
            if !text.hasPrefix("SWIFT_BACKTRACE=") { entries.append(text) }
            pointer += 1
        }
        return entries + ["SWIFT_BACKTRACE=enable=no"]
    }

    /// A channel on `eventLoop` for the link descriptor `link`, with the link's codec and then `handler`.
    static func attach(
        link: Int32, on eventLoop: any EventLoop, handler: @escaping @Sendable () -> any ChannelHandler
    ) -> EventLoopFuture<any Channel> {
        ClientBootstrap(group: eventLoop)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandlers(ModuleLinkCodec.handlers() + [handler()])
                }
            }
            .withConnectedSocket(link)
    }

    /// Sends `signal` to the process. It is not reaped before `reap`, so its pid cannot have been reused.
    func kill(_ signal: Int32 = SIGKILL) {
        _ = Glibc.kill(pid, signal)
    }

    /// Waits for the process to end, off the event loops, and hands `done` how it ended. Call once, after its
    /// link closed: a host whose link is gone but which lingers (stuck in a module's exit handler) gets
    /// `gracePeriod`, then SIGKILL.
    func reap(gracePeriod: Duration = .seconds(1), _ done: @escaping @Sendable (ModuleHostTermination) -> Void) {
        NIOThreadPool.singleton.submit { [pid] _ in
            var status: Int32 = 0
            let deadline = ContinuousClock.now + gracePeriod
            while waitpid(pid, &status, WNOHANG) == 0 {
                guard ContinuousClock.now < deadline else {
                    _ = Glibc.kill(pid, SIGKILL)
                    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
                    break
                }
                // The link closes a moment before the kernel has the exit status: poll briefly for it.
                usleep(1000)
            }
            done(ModuleHostTermination(status: status))
        }
    }
}

/// How a module host process ended, as `waitpid` reported it.
enum ModuleHostTermination: Equatable, Sendable, CustomStringConvertible {
    case exited(code: Int32)
    case signalled(Int32)

    init(status: Int32) {
        var signal: Int32 = 0
        var code: Int32 = 0
        self = rpcd_wait_status_signal(status, &signal, &code) != 0 ? .signalled(signal) : .exited(code: code)
    }

    /// `SIGSEGV`, `SIGKILL`, ... for a signal; `exit 3` for an exit.
    var description: String {
        switch self {
        case .exited(let code): "exit \(code)"
        case .signalled(let signal): Self.signalName(signal)
        }
    }

    /// The signal's name (`SIGSEGV`); `nil` for an exit.
    var signalName: String? {
        if case .signalled(let signal) = self { Self.signalName(signal) } else { nil }
    }

    private static func signalName(_ signal: Int32) -> String {
        let names: [Int32: String] = [
            SIGHUP: "SIGHUP", SIGINT: "SIGINT", SIGQUIT: "SIGQUIT", SIGILL: "SIGILL", SIGTRAP: "SIGTRAP",
            SIGABRT: "SIGABRT", SIGBUS: "SIGBUS", SIGFPE: "SIGFPE", SIGKILL: "SIGKILL", SIGSEGV: "SIGSEGV",
            SIGPIPE: "SIGPIPE", SIGALRM: "SIGALRM", SIGTERM: "SIGTERM", SIGXCPU: "SIGXCPU", SIGXFSZ: "SIGXFSZ",
            SIGSYS: "SIGSYS",
        ]
        return names[signal] ?? "signal \(signal)"
    }
}

/// A module host process could not be started.
struct ModuleHostSpawnError: Error, CustomStringConvertible {
    var executable: String
    var errno: Int32

    var description: String { "cannot start the module host \(executable): \(String(cString: strerror(errno)))" }
}
