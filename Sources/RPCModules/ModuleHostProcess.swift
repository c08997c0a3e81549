import CRPCDHostSupport
import NIOCore
import NIOPosix
import RPCModuleHost
import RPCModuleLink
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// One running module host process, held by its pidfd; rpcd's end of its link is a NIO channel on a socketpair
/// (`attach`).
///
/// A host shares nothing with rpcd but what it is handed: its link as descriptor 3, rpcd's standard input,
/// output and error (the journal under systemd), and its `ModuleHostWalls`; every other descriptor rpcd holds
/// (listeners, peers' connections, whatever a library opened) is closed when it execs. Its end is seen from the
/// process, not from the link (`ProcessWatcher`): a child the module forked that keeps the link open does not
/// keep rpcd from answering the host's calls. Spawning is one clone(CLONE_VFORK) and exec, well under a
/// millisecond, so it may run on an event loop. Thread-safe.
final class ModuleHostProcess: Sendable {
    let pid: pid_t
    /// Open until the process is reaped: signals go through it, so never to another process that reused `pid`.
    private let pidfd: Mutex<Int32>

    private init(pid: pid_t, pidfd: Int32) {
        self.pid = pid
        self.pidfd = Mutex(pidfd)
    }

    /// Starts `executable` with one end of a new socketpair as its descriptor 3 and `handed` as 4, 5, ...,
    /// inside `walls`; returns the process and the other end, which `attach` takes over. Call `watch` next.
    static func spawn(
        executable: String, arguments: [String], handing handed: [Int32] = [], walls: ModuleHostWalls = ModuleHostWalls()
    ) throws(ModuleHostSpawnError) -> (ModuleHostProcess, Int32) {
        let program = rpcd_open_executable(executable)
        guard program >= 0 else { throw ModuleHostSpawnError(executable: executable, errno: -program) }
        defer { close(program) }
        var ends: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
            throw ModuleHostSpawnError(executable: executable, errno: errno)
        }
        defer { close(ends[1]) }
        var pid: pid_t = 0
        var pidfd: Int32 = -1
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup($0) } + [nil]
        defer { for string in argv + envp { free(string) } }
        let descriptors = [ends[1]] + handed
        let result = executable.withCString { path in
            argv.withUnsafeBufferPointer { argv in
                envp.withUnsafeBufferPointer { envp in
                    descriptors.withUnsafeBufferPointer { fds in
                        var request = rpcd_spawn_request(
                            executable: path, executable_fd: program, argv: argv.baseAddress, envp: envp.baseAddress, fds: fds.baseAddress,
                            fd_count: fds.count, cgroup_procs_fd: walls.cgroupProcs ?? -1, uid: walls.uid ?? uid_t.max,
                            gid: walls.gid ?? gid_t.max, max_tasks: UInt64(walls.maxTasks ?? 0))
                        return rpcd_spawn(&request, &pid, &pidfd)
                    }
                }
            }
        }
        guard result == 0 else {
            close(ends[0])
            throw ModuleHostSpawnError(executable: executable, errno: result)
        }
        return (ModuleHostProcess(pid: pid, pidfd: pidfd), ends[0])
    }

    /// Calls `ended` once, on the watcher's thread, when the process has ended and been reaped (at once if it
    /// already has). Call once, after the process is recorded wherever `ended` looks for it.
    func watch(ended: @escaping @Sendable (ProcessTermination) -> Void) {
        let descriptor = pidfd.withLock { $0 }
        ProcessWatcher.shared.watch(pidfd: descriptor, pid: pid) { termination in
            self.pidfd.withLock { descriptor in
                close(descriptor)
                descriptor = -1
            }
            ended(termination)
        }
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

    /// A channel on `eventLoop` for the link descriptor `link`, with the link's codec (admitting the frames it
    /// gathers with `admission`) and then `handler`.
    static func attach(
        link: Int32, on eventLoop: any EventLoop, admission: ModuleLinkFrameReceiver.Admit? = nil,
        handler: @escaping @Sendable () -> any ChannelHandler
    ) -> EventLoopFuture<any Channel> {
        ClientBootstrap(group: eventLoop)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandlers(ModuleLinkCodec.handlers(admission: admission, descriptor: link) + [handler()])
                }
            }
            .withConnectedSocket(link)
    }

    /// Sends `signal` to the process, if it has not been reaped yet.
    func kill(_ signal: Int32 = SIGKILL) {
        pidfd.withLock { descriptor in
            if descriptor >= 0 { _ = rpcd_pidfd_signal(descriptor, signal) }
        }
    }
}

/// What a module host is started inside, beyond its sandbox (which it applies itself): where rpcd can have them,
/// a cgroup of its own, a user and group of its own, and the number of tasks that user may have. nil: rpcd's.
struct ModuleHostWalls: Sendable {
    /// A descriptor of `cgroup.procs` of the host's cgroup; the host is in it from its first instruction.
    var cgroupProcs: Int32?
    var uid: uid_t?
    var gid: gid_t?
    var maxTasks: Int?
}

/// A module host process could not be started.
struct ModuleHostSpawnError: Error, CustomStringConvertible {
    var executable: String
    var errno: Int32

    var description: String { "cannot start the module host \(executable): \(String(cString: strerror(errno)))" }
}
