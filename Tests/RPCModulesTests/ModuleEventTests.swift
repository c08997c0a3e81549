import Foundation
import JSONRPC
import Logging
import NIOCore
import NIOPosix
import RPCBinding
import RPCCore
import RPCJSON
@testable import RPCModuleHost
@testable import RPCModules
import XCTest

/// `rpcd_module.events` and `host->emit`, with a small C module compiled against the real header.
final class ModuleEventTests: XCTestCase {
    private var directory: URL!
    private var group: MultiThreadedEventLoopGroup!
    private var pool: WorkerPool!

    override func setUp() {
        directory = TestModule.temporaryDirectory()
        group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        pool = WorkerPool(threads: 1)
    }

    override func tearDownWithError() throws {
        try pool.syncShutdownGracefully()
        try group.syncShutdownGracefully()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Declares `changed` (and, by `defines`, broken declarations); each method emits something and answers
    /// with what emit returned.
    private static let source = #"""
    #include <rpcd_module.h>
    #include <stdio.h>

    #ifndef EVENT_NAME
    #define EVENT_NAME "changed"
    #endif
    #ifndef EVENT_SCHEMA
    #define EVENT_SCHEMA "{\"type\":\"object\"}"
    #endif
    #ifndef N_EVENTS
    #define N_EVENTS 1
    #endif

    static const rpcd_host *host;
    static rpcd_handler *handler;

    static int init(const rpcd_host *h, rpcd_handler *hd, void **out, char *error, size_t size) {
        (void)error; (void)size;
        host = h;
        handler = hd;
        *out = NULL;
        return 0;
    }

    static void answer(rpcd_call *c, int status) {
        char text[8];
        int n = snprintf(text, sizeof text, "%d", status);
        host->reply_result(c, text, (size_t)n);
    }

    static void call(void *instance, size_t method, const char *params, size_t len, rpcd_call *c) {
        (void)instance; (void)params; (void)len;
        switch (method) {
        case 0: answer(c, host->emit(handler, "changed", "{\"n\":1}", 7)); break;   /* declared */
        case 1: answer(c, host->emit(handler, "other", "{}", 2)); break;           /* undeclared */
        case 2: answer(c, host->emit(handler, "changed", "{oops", 5)); break;       /* not JSON */
        }
    }

    static void deinit(void *instance) { (void)instance; }

    static const rpcd_method methods[] = {
        {sizeof(rpcd_method), "declared", NULL, NULL, 0, NULL, 0},
        {sizeof(rpcd_method), "undeclared", NULL, NULL, 0, NULL, 0},
        {sizeof(rpcd_method), "not_json", NULL, NULL, 0, NULL, 0},
    };
    static const rpcd_event events[] = {
        {sizeof(rpcd_event), EVENT_NAME, "Something changed", EVENT_SCHEMA},
        {sizeof(rpcd_event), EVENT_NAME, NULL, NULL},
    };
    static const rpcd_module module = {
        RPCD_MODULE_ABI_VERSION, sizeof(rpcd_module), "eventmod", "1.0.0", "Emits events",
        methods, 3, init, call, deinit, events, N_EVENTS, NULL,
    };

    const rpcd_module *rpcd_module_entry_v1(void) { return &module; }
    """#

    private func build(_ name: String = "eventmod", defines: [String] = []) throws -> String {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let sourcePath = directory.appendingPathComponent("\(name).c").path
        let output = directory.appendingPathComponent("\(name).so").path
        try Self.source.write(toFile: sourcePath, atomically: true, encoding: .utf8)
        let compiler = Process()
        compiler.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        compiler.arguments = ["cc", "-shared", "-fPIC", "-Wall", "-Werror", "-I", TestModule.headerDirectory]
            + defines.map { "-D\($0)" } + ["-o", output, sourcePath]
        try compiler.run()
        compiler.waitUntilExit()
        XCTAssertEqual(compiler.terminationStatus, 0, "cc failed for \(name)")
        return output
    }

    func testDeclaredEventsAreReadIntoTheDescriptor() throws {
        let image = try ModuleLoader().load(path: build())
        XCTAssertEqual(image.events, [RPCEventDescriptor(name: "changed", summary: "Something changed", schema: ["type": "object"])])
    }

    func testBrokenEventDeclarationsAreRefusedByName() throws {
        let cases: [(String, [String], String)] = [
            ("badevent", [#"EVENT_NAME="has-dash""#], "event 0 has a missing or invalid name"),
            ("twoevents", ["N_EVENTS=2"], "event 'changed' is declared twice"),
            ("badschema", [#"EVENT_SCHEMA="{nope""#], "the JSON Schema of event 'changed' is not valid JSON"),
        ]
        for (name, defines, reason) in cases {
            let path = try build(name, defines: defines)
            XCTAssertThrowsError(try ModuleLoader().load(path: path), name) { error in
                XCTAssertTrue("\(error)".contains(reason), "\(error)")
            }
        }
    }

    func testEmitPublishesDeclaredEventsWithValidPayloadsOnly() throws {
        let image = try ModuleLoader().load(path: build())
        var configuration = HandlerConfiguration(name: "eventmod")
        configuration.module = image.path
        let hub = RPCEventHub()
        let service = try ModuleService(image: image, configuration: configuration, pool: pool, logger: Logger(label: "test"), events: hub)
        defer { service.retire() }
        XCTAssertEqual(service.descriptor.events.map(\.name), ["changed"])
        let router = RPCRouter(registry: try RPCServiceRegistry(services: [service]), parser: RPCEnvelopeParser(), events: hub)
        func call(_ method: String) throws -> String? {
            let loop = group.next()
            let reply = loop.makePromise(of: String?.self)
            loop.execute {
                router.dispatch(
                    router.parser.parse(ByteBuffer(string: #"{"jsonrpc":"2.0","method":"eventmod.\#(method)","id":1}"#)),
                    connection: RPCConnectionInfo(id: 1, peer: .unixSocket(), logger: Logger(label: "test")),
                    eventLoop: loop) { reply.succeed($0.map { String(buffer: $0) }) }
            }
            return try reply.futureResult.wait()
        }
        XCTAssertEqual(try call("declared"), #"{"jsonrpc":"2.0","result":0,"id":1}"#)
        XCTAssertEqual(hub.published.value, 1)
        XCTAssertEqual(try call("undeclared"), #"{"jsonrpc":"2.0","result":-1,"id":1}"#)
        XCTAssertEqual(try call("not_json"), #"{"jsonrpc":"2.0","result":-1,"id":1}"#)
        XCTAssertEqual(hub.published.value, 1, "refused events are not published")
    }
}
