import Foundation
import NIOCore
import NIOEmbedded
import RPCModuleLink
@testable import RPCModuleHost
import XCTest

/// A module host's end of the link on an EmbeddedChannel, as the tests of the host's link drive it: messages in
/// as rpcd frames them, what the host writes read back as messages.
enum ModuleHostLink {
    /// Runs `body` with a host's end serving the test module (`TestModule`), with one worker thread.
    static func withTestModule(_ body: (EmbeddedChannel) throws -> Void) throws {
        let directory = TestModule.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let module = try TestModule.build(into: directory)
        let pool = WorkerPool(threads: 1)
        defer { try? pool.syncShutdownGracefully() }
        try body(try serving(module, pool: pool))
    }

    /// The host's end serving `module` (its `ready` read and checked).
    static func serving(_ module: String, pool: WorkerPool) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        // As rpcd hands a host its module: opened and checked.
        let file = try ModuleLoader.openTrusted(path: module)
        defer { close(file) }
        try channel.pipeline.syncOperations.addHandlers(
            ModuleLinkCodec.handlers() + [ModuleHostServer(pool: pool, sandbox: .success(.noLandlock), moduleFile: file)])
        var configuration = HandlerConfiguration(name: "test")
        configuration.module = module
        try channel.writeInbound(ModuleLinkCodec.frame(
            .start(ModuleHostStart(modulePath: module, configuration: configuration).json.linkBuffer),
            allocator: ByteBufferAllocator()))
        channel.embeddedEventLoop.run()
        XCTAssertTrue(try written(by: channel).contains { if case .ready = $0 { true } else { false } })
        return channel
    }

    /// Sends `messages` to the host in one read.
    static func send(_ messages: [ModuleLinkMessage], to channel: EmbeddedChannel) throws {
        var read = ByteBuffer()
        for message in messages { read.writeImmutableBuffer(ModuleLinkCodec.frame(message, allocator: ByteBufferAllocator())) }
        try channel.writeInbound(read)
    }

    /// What the host has written since last asked, as messages.
    static func written(by channel: EmbeddedChannel) throws -> [ModuleLinkMessage] {
        var buffers: [ByteBuffer] = []
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) { buffers.append(buffer) }
        return try messages(in: buffers)
    }

    /// The messages in `buffers`, as the host wrote them.
    static func messages(in buffers: [ByteBuffer]) throws -> [ModuleLinkMessage] {
        let reader = EmbeddedChannel()
        try reader.pipeline.syncOperations.addHandlers(ModuleLinkCodec.handlers())
        for buffer in buffers { try reader.writeInbound(buffer) }
        var messages: [ModuleLinkMessage] = []
        while let burst = try reader.readInbound(as: [ModuleLinkMessage].self) { messages += burst }
        return messages
    }
}
