import CRPCDHostSupport
import NIOCore
import NIOPosix
import RPCLogging
import RPCModuleLink

#if canImport(Glibc)
import Glibc
#endif

/// The `rpcd-module-host` executable's main.
package enum ModuleHostMain {
    /// The link to rpcd: the descriptor rpcd hands every host (`ModuleHostProcess.spawn`).
    static let link: Int32 = 3

    /// Serves the link on descriptor 3 until it closes, then exits.
    package static func main() -> Never {
        guard let arguments = ModuleHostArguments(parsing: Array(CommandLine.arguments.dropFirst())) else {
            DescriptorOutput.standardError("rpcd-module-host: runs one handler's module for rpcd, which starts it; not meant to be run by hand\n")
            _exit(2)
        }
        AllocatorTuning.moduleHost.apply()
        HostFunctions.checksResults = false  // rpcd checks them where they arrive
        // First, while this is the only thread: Landlock binds the threads started after it.
        let sandbox = Result { () throws(ModuleHostSandboxError) in try ModuleHostSandbox.apply(arguments) }
        signal(SIGPIPE, SIG_IGN)
        // rpcd stops its hosts itself, through the link, once their calls in flight are answered. systemd's
        // `systemctl stop` and `systemctl kill` signal every process of the unit: a host that died of that
        // SIGTERM would fail the calls rpcd is letting finish, and a SIGHUP meant as a reload would kill it.
        for stop in [SIGTERM, SIGINT, SIGHUP] { signal(stop, SIG_IGN) }
        _ = rpcd_exit_with_parent()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let pool = WorkerPool(threads: max(2, System.coreCount))
        do {
            let channel = try ClientBootstrap(group: group)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandlers(ModuleLinkCodec.handlers(descriptor: link) + [ModuleHostServer(
                            pool: pool, sandbox: sandbox, moduleFile: arguments.moduleFile, kind: arguments.kind,
                            handlerSandbox: arguments.sandbox)])
                    }
                }
                .withConnectedSocket(link).wait()
            try channel.closeFuture.wait()
            // A program handler's program gets its time to finish once its input closed.
            HandlerProgram.current?.stop()
        } catch {
            DescriptorOutput.standardError("rpcd-module-host: \(error)\n")
            _exit(1)
        }
        _exit(0)
    }
}
