import CRPCDModule
import RPCJSON
import RPCTestSupport
import Synchronization
import XCTest

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a module answered for one call, as the host table received it.
enum Reply: Equatable, CustomStringConvertible {
    case result(String)
    case error(code: Int64, message: String, data: String?)

    var description: String {
        switch self {
        case .result(let text): "result \(text)"
        case .error(let code, let message, let data): "error \(code) \(message) \(data ?? "-")"
        }
    }

    /// The result parsed, or nil for an error.
    var resultValue: JSONValue? {
        guard case .result(let text) = self else { return nil }
        return try? JSONValue(parsing: text)
    }

    var errorCode: Int64? {
        guard case .error(let code, _, _) = self else { return nil }
        return code
    }

    /// `data.detail` of an error.
    var detail: String? {
        guard case .error(_, _, let data?) = self else { return nil }
        return (try? JSONValue(parsing: data))?["detail"]?.stringValue
    }
}

struct LogEntry: Equatable {
    var priority: Int32
    var message: String
    var fields: [String: String]
}

/// A real `rpcd_host` table whose functions record what modules hand them. C function pointers cannot
/// capture, so they all go through this one shared recorder, keyed by handler and call handles.
final class TestHost: @unchecked Sendable {
    static let shared = TestHost()

    private struct State {
        var replies: [UInt: [Reply]] = [:]
        var logs: [UInt: [LogEntry]] = [:]
        var configs: [UInt: [String: UnsafeMutablePointer<CChar>]] = [:]
        var configReads: [UInt: [String]] = [:]
        var replyHooks: [UInt: @Sendable () -> Void] = [:]
        var emitted: [UInt: [(event: String, payload: String)]] = [:]
    }

    private let state = Mutex(State())
    /// The host table: valid for the life of the process, as the ABI promises.
    let table: UnsafePointer<rpcd_host>

    private init() {
        let table = UnsafeMutablePointer<rpcd_host>.allocate(capacity: 1)
        table.initialize(to: rpcd_host())
        table.pointee.abi_version = UInt32(RPCD_MODULE_ABI_VERSION)
        table.pointee.struct_size = UInt32(MemoryLayout<rpcd_host>.stride)
        table.pointee.reply_result = { call, text, length in
            let body = String(decoding: UnsafeRawBufferPointer(start: text, count: length), as: UTF8.self)
            TestHost.shared.record(call, .result(body))
        }
        table.pointee.reply_error = { call, code, message, data, length in
            let dataText = data.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: length), as: UTF8.self) }
            TestHost.shared.record(call, .error(code: code, message: String(cString: message!), data: dataText))
        }
        table.pointee.log = { handler, priority, message, fields, count in
            var entry = LogEntry(priority: priority, message: String(cString: message!), fields: [:])
            for index in 0..<count {
                let field = fields![index]
                entry.fields[String(cString: field.name)] = String(cString: field.value)
            }
            TestHost.shared.state.withLock { $0.logs[key(handler), default: []].append(entry) }
        }
        table.pointee.config_get = { handler, name in
            let name = String(cString: name!)
            let address = TestHost.shared.state.withLock { state -> UInt in
                state.configReads[key(handler), default: []].append(name)
                return UInt(bitPattern: state.configs[key(handler)]?[name])
            }
            return UnsafePointer(bitPattern: address)
        }
        table.pointee.emit = { handler, event, payload, length in
            let text = String(decoding: UnsafeRawBufferPointer(start: payload, count: length), as: UTF8.self)
            TestHost.shared.state.withLock { $0.emitted[key(handler), default: []].append((String(cString: event!), text)) }
            return 0
        }
        self.table = UnsafePointer(table)
    }

    /// The events emitted through `handler`, in order: the event's name and its payload's JSON text.
    func emitted(_ handler: OpaquePointer) -> [(event: String, payload: String)] {
        state.withLock { $0.emitted[key(handler)] ?? [] }
    }

    /// A copy of the table with some fields changed, for testing the module's checks.
    func modifiedTable(_ change: (inout rpcd_host) -> Void) -> UnsafePointer<rpcd_host> {
        let copy = UnsafeMutablePointer<rpcd_host>.allocate(capacity: 1)
        copy.initialize(to: table.pointee)
        change(&copy.pointee)
        return UnsafePointer(copy)
    }

    /// A fresh handler handle with these `[Config]` values.
    func makeHandler(config: [String: String] = [:]) -> OpaquePointer {
        let handle = OpaquePointer(UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1))
        state.withLock { state in
            state.configs[key(handle)] = config.mapValues { strdup($0)! }
        }
        return handle
    }

    /// A fresh call handle.
    func makeCall() -> OpaquePointer {
        OpaquePointer(UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1))
    }

    private func record(_ call: OpaquePointer?, _ reply: Reply) {
        let hook = state.withLock { state in
            state.replies[key(call), default: []].append(reply)
            return state.replyHooks.removeValue(forKey: key(call))
        }
        hook?()
    }

    /// Runs `hook` inside the host's reply function for `call`, as rpcd does when the last answer of a
    /// retired handler triggers its deinit.
    func onReply(_ call: OpaquePointer, _ hook: @escaping @Sendable () -> Void) {
        state.withLock { $0.replyHooks[key(call)] = hook }
    }

    func replies(_ call: OpaquePointer) -> [Reply] {
        state.withLock { $0.replies[key(call)] ?? [] }
    }

    func logs(_ handler: OpaquePointer) -> [LogEntry] {
        state.withLock { $0.logs[key(handler)] ?? [] }
    }

    func configReads(_ handler: OpaquePointer) -> [String] {
        state.withLock { $0.configReads[key(handler)] ?? [] }
    }

    /// Waits until `call` has been answered, then returns the first answer.
    func waitForReply(
        _ call: OpaquePointer, timeout: Duration = .seconds(10), file: StaticString = #filePath, line: UInt = #line
    ) async throws -> Reply {
        try await waitUntil("a reply", timeout: timeout, file: file, line: line) { !replies(call).isEmpty }
        guard let first = replies(call).first else { throw CancellationError() }
        return first
    }
}

private func key(_ pointer: OpaquePointer?) -> UInt {
    UInt(bitPattern: pointer.map { Int(bitPattern: UnsafeRawPointer($0)) } ?? 0)
}

/// A loaded module descriptor, driven only through its C function pointers.
struct ModuleUnderTest {
    let descriptor: UnsafePointer<rpcd_module>

    init(_ descriptor: UnsafeRawPointer) {
        self.descriptor = descriptor.assumingMemoryBound(to: rpcd_module.self)
    }

    var module: rpcd_module { descriptor.pointee }

    var methodNames: [String] {
        (0..<module.n_methods).map { String(cString: module.methods[$0].name) }
    }

    func method(_ name: String) -> rpcd_method? {
        guard let index = methodNames.firstIndex(of: name) else { return nil }
        return module.methods[index]
    }

    /// Calls init(); returns the instance, or the reason it failed.
    func initialize(
        config: [String: String] = [:], host: UnsafePointer<rpcd_host> = TestHost.shared.table, reasonSize: Int = 512
    ) -> Result<Instance, InitFailure> {
        let handler = TestHost.shared.makeHandler(config: config)
        var instance: UnsafeMutableRawPointer? = nil
        var reason = [CChar](repeating: 0x7F, count: reasonSize)
        let status = reason.withUnsafeMutableBufferPointer { buffer in
            module.`init`!(host, handler, &instance, buffer.baseAddress, buffer.count)
        }
        if status != 0 {
            let end = reason.firstIndex(of: 0)
            return .failure(
                InitFailure(
                    status: status, reason: end.map { String(decoding: reason[..<$0].map { UInt8(bitPattern: $0) }, as: UTF8.self) },
                    handler: handler))
        }
        return .success(Instance(module: self, instance: instance, handler: handler))
    }

    /// init() that must succeed.
    func start(config: [String: String] = [:], file: StaticString = #filePath, line: UInt = #line) throws -> Instance {
        switch initialize(config: config) {
        case .success(let instance): return instance
        case .failure(let failure):
            XCTFail("init failed: \(failure.reason ?? "(no reason)")", file: file, line: line)
            throw failure
        }
    }
}

struct InitFailure: Error, @unchecked Sendable {
    let status: Int32
    /// Up to the NUL, or nil when the module wrote no NUL.
    let reason: String?
    let handler: OpaquePointer
}

/// One handler instance of a module.
struct Instance {
    let module: ModuleUnderTest
    let instance: UnsafeMutableRawPointer?
    let handler: OpaquePointer

    /// Invokes call() with `params` (nil: no params) from a buffer that is scribbled over as soon as call()
    /// returns, so a module that keeps the pointer instead of copying reads garbage. Returns the call handle.
    @discardableResult
    func send(_ method: String, _ params: String? = nil, call: OpaquePointer = TestHost.shared.makeCall()) -> OpaquePointer {
        guard let index = module.methodNames.firstIndex(of: method) else {
            XCTFail("no method \(method)")
            return call
        }
        var bytes = Array((params ?? "").utf8).map { CChar(bitPattern: $0) }
        bytes.withUnsafeMutableBufferPointer { buffer in
            module.module.call!(instance, index, params == nil ? nil : UnsafePointer(buffer.baseAddress), buffer.count, call)
            for position in buffer.indices { buffer[position] = CChar(bitPattern: UInt8(ascii: "#")) }
        }
        return call
    }

    /// Calls and waits for the answer.
    func call(_ method: String, _ params: String? = nil, file: StaticString = #filePath, line: UInt = #line) async throws -> Reply {
        try await TestHost.shared.waitForReply(send(method, params), file: file, line: line)
    }

    var logs: [LogEntry] { TestHost.shared.logs(handler) }

    func deinitialize() {
        module.module.`deinit`?(instance)
    }
}

/// Assertions on one call (XCTAssert's autoclosures cannot await).
extension Instance {
    func expect(
        _ method: String, _ params: String? = nil, _ expected: Reply, file: StaticString = #filePath, line: UInt = #line
    ) async throws {
        let reply = try await call(method, params, file: file, line: line)
        XCTAssertEqual(reply, expected, file: file, line: line)
    }

    /// The call succeeds with a result equal to `expected` (parsed, so `3.5` and `3.50` differ only as text).
    func expectResult(
        _ method: String, _ params: String? = nil, _ expected: JSONValue, file: StaticString = #filePath,
        line: UInt = #line
    ) async throws {
        let reply = try await call(method, params, file: file, line: line)
        XCTAssertEqual(reply.resultValue, expected, "\(reply)", file: file, line: line)
    }

    /// The call fails with -32602 "Invalid params" and this `data.detail`.
    func expectInvalidParams(
        _ method: String, _ params: String? = nil, _ detail: String, file: StaticString = #filePath, line: UInt = #line
    ) async throws {
        let reply = try await call(method, params, file: file, line: line)
        guard case .error(let code, let message, _) = reply else {
            return XCTFail("expected an error, got \(reply)", file: file, line: line)
        }
        XCTAssertEqual(code, -32602, file: file, line: line)
        XCTAssertEqual(message, "Invalid params", file: file, line: line)
        XCTAssertEqual(reply.detail, detail, file: file, line: line)
    }
}
