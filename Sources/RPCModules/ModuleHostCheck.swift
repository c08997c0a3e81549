import Logging
package import NIOCore
package import RPCBinding
import RPCJSON
package import RPCModuleHost
import RPCModuleLink
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// `rpcd --check-config`'s look at a handler's module, taken in a module host process rather than in the
/// checking process: the host is sandboxed as the handler's own would be, loads the module with the same checks
/// (ownership, mode, ABI, descriptor, `[Config]` keys), reports its descriptor and exits, and the module's
/// `init` never runs. Loading a library runs its constructors, with the rights of whoever loads it: an
/// administrator checking a module as root must not run its code as root, and a module that crashes while it
/// loads makes the check report it, not fail.
///
/// Blocks the calling thread until the host has answered, ended, or `timeout` has passed (then it is killed);
/// call it off the event loops of `eventLoop`'s group.
package enum ModuleHostCheck {
    /// The module's descriptor as `configuration` would serve it, or why rpcd would refuse the handler.
    package static func check(
        _ configuration: HandlerConfiguration, modulePath: String, executable: String = ModuleHostExecutable.locate(),
        walls: HostWalls = .processOnly, eventLoop: any EventLoop, timeout: Duration? = nil
    ) -> Result<RPCServiceDescriptor, ModuleLoadError> {
        // As long as the daemon gives a host to start its module (whose init it also waits for).
        let timeout = timeout ?? ModuleHostPolicy.standard.startTimeout
        let spawned: (ModuleHostProcess, Int32)
        let ended = eventLoop.makePromise(of: ProcessTermination.self)
        do {
            let handed = try ModuleHostArguments.openServed(modulePath, configuration: configuration)
            defer { for file in handed { close(file) } }
            let prepared = try walls.prepare(handler: configuration.name, sandbox: configuration.sandbox)
            defer { prepared.spawned(true) }
            let arguments = ModuleHostArguments(
                handler: configuration.name, modulePath: modulePath, sandbox: configuration.sandbox,
                kind: configuration.hostKind)
            spawned = try ModuleHostProcess.spawn(
                executable: executable, arguments: arguments.arguments, handing: handed, walls: prepared.walls)
        } catch let error as ModuleLoadError {
            ended.fail(CheckFailure(reason: "not started"))
            return .failure(error)
        } catch {
            ended.fail(CheckFailure(reason: "not started"))
            return .failure(ModuleLoadError(modulePath, "\(error)"))
        }
        let (process, link) = spawned
        process.watch { ended.succeed($0) }
        let answer = eventLoop.makePromise(of: RPCServiceDescriptor.self)
        let start = ModuleHostStart(modulePath: modulePath, configuration: configuration, checkOnly: true)
        let channel = ModuleHostProcess.attach(link: link, on: eventLoop) { CheckClient(answer: answer) }
        channel.whenSuccess { $0.writeAndFlush([ModuleLinkMessage.start(start.json.linkBuffer)], promise: nil) }
        channel.whenFailure { answer.fail($0) }
        let timer = eventLoop.scheduleTask(in: timeout.timeAmount) {
            answer.fail(CheckFailure(reason: "the module did not load within \(timeout)"))
        }
        let result = Result { try answer.futureResult.wait() }
        timer.cancel()
        if case .failure = result { process.kill() }
        // Closing the link ends a host that answered; one that did not was killed above.
        if let channel = try? channel.wait() { try? channel.close().wait() }
        let termination = try? ended.futureResult.wait()
        return result.mapError { error in
            if let failure = error as? CheckFailure { return ModuleLoadError(modulePath, failure.reason) }
            return ModuleLoadError(
                modulePath, "its module host ended (\(termination.map { "\($0)" } ?? "not reaped")) while it loaded the module")
        }
    }

    private struct CheckFailure: Error {
        var reason: String
    }

    /// rpcd's end of a checking host's link: the first answer settles the check; an early close means the host died.
    private final class CheckClient: ChannelInboundHandler {
        typealias InboundIn = [ModuleLinkMessage]
        private let answer: EventLoopPromise<RPCServiceDescriptor>

        init(answer: EventLoopPromise<RPCServiceDescriptor>) {
            self.answer = answer
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            for message in unwrapInboundIn(data) { received(message) }
        }

        private func received(_ message: ModuleLinkMessage) {
            switch message {
            case .ready(let json):
                do {
                    answer.succeed(try RPCServiceDescriptor(linkBuffer: json))
                } catch {
                    answer.fail(CheckFailure(reason: "its module host sent an invalid descriptor (\(error))"))
                }
            case .startFailed(let reason):
                answer.fail(CheckFailure(reason: reason))
            default:
                break  // log entries of the host (a missing Landlock, say) are the daemon's business, not the check's
            }
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            context.close(promise: nil)
        }

        func channelInactive(context: ChannelHandlerContext) {
            answer.fail(ChannelError.eof)
            context.fireChannelInactive()
        }
    }
}
