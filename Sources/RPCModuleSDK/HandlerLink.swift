import CRPCDModule
import RPCJSON
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// One handler's connection to the host: the `rpcd_host` table and the `rpcd_handler` handle.
///
/// The host table lives as long as the process; the handler handle only until `deinit`. So logging and
/// configuration reads are refused after `close()`, under a lock that `close()` also takes, which makes a
/// log call racing with deinit either finish first or do nothing. Replies need no such guard: the host keeps
/// call handles valid until answered, and drops late answers to timed-out calls safely.
final class HandlerLink: @unchecked Sendable {
    let host: UnsafePointer<rpcd_host>
    let handler: OpaquePointer?
    private let closed = Mutex(false)

    init(host: UnsafePointer<rpcd_host>, handler: OpaquePointer?) {
        self.host = host
        self.handler = handler
    }

    /// The size of ABI 1's first `rpcd_host` (up to `config_get`), what rpcd 0.1 and 0.2 hand a module.
    static let firstHostSize = MemoryLayout<rpcd_host>.offset(of: \rpcd_host.call_cancelled)!

    /// Why this host table cannot be used, or nil.
    static func problem(with host: UnsafePointer<rpcd_host>?) -> String? {
        guard let host else { return "the host passed no rpcd_host table" }
        let table = host.pointee
        if table.abi_version != UInt32(RPCD_MODULE_ABI_VERSION) {
            return "host ABI version \(table.abi_version), this module needs \(RPCD_MODULE_ABI_VERSION)"
        }
        // An older rpcd's table ends after config_get; the functions added since are used only when present.
        if Int(table.struct_size) < firstHostSize {
            return "host table has \(table.struct_size) bytes, this module needs at least \(firstHostSize)"
        }
        if table.reply_result == nil || table.reply_error == nil || table.log == nil || table.config_get == nil {
            return "the host table lacks a function"
        }
        return nil
    }

    func close() {
        closed.withLock { $0 = true }
    }

    func config(_ key: String) -> String? {
        closed.withLock { closed -> String? in
            guard !closed else { return nil }
            let value = key.withCString { host.pointee.config_get!(handler, $0) }
            return value.map { String(cString: $0) }
        }
    }

    /// A host function added after ABI 1's first table, when the host's table has it: read at its offset, never
    /// through `host.pointee`, which would read a whole newer `rpcd_host` out of an older rpcd's shorter table.
    private func function<Function>(_ field: KeyPath<rpcd_host, Function?>) -> Function? {
        let table = UnsafeRawPointer(host)
        let offset = MemoryLayout<rpcd_host>.offset(of: field)!
        let hostSize = Int(table.load(fromByteOffset: MemoryLayout<rpcd_host>.offset(of: \rpcd_host.struct_size)!, as: UInt32.self))
        guard hostSize >= offset + MemoryLayout<Function?>.size else { return nil }
        return table.load(fromByteOffset: offset, as: Function?.self)
    }

    private var emitFunction: EmitFunction? { function(\rpcd_host.emit) }

    private typealias EmitFunction = @convention(c) (OpaquePointer?, UnsafePointer<CChar>?, UnsafePointer<CChar>?, Int) -> Int32

    /// `host->state_directory`: the handler's `StateDirectory=` path; nil when it sets none, or the host is an
    /// rpcd without it, or after `close()`.
    func stateDirectory() -> String? {
        guard let get = function(\rpcd_host.state_directory) else { return nil }
        return closed.withLock { closed -> String? in
            guard !closed else { return nil }
            return get(handler).map { String(cString: $0) }
        }
    }

    /// `host->emit`, under the same lock as logging, so an emit racing with deinit either finishes first or
    /// does nothing. False when the host has no `emit` or refused the event.
    func emit(_ event: String, _ json: [UInt8]) -> Bool {
        guard let emit = emitFunction else { return false }
        return closed.withLock { closed -> Bool in
            guard !closed else { return false }
            return event.withCString { name in
                json.withUnsafeBufferPointer { buffer in
                    buffer.withMemoryRebound(to: CChar.self) { text in emit(handler, name, text.baseAddress, text.count) == 0 }
                }
            }
        }
    }

    func log(_ level: RPCModuleLogLevel, _ message: String, _ fields: [String: String]) {
        let names = fields.keys.sorted()
        var cFields: [rpcd_log_field] = names.map { name in
            rpcd_log_field(name: UnsafePointer(strdup(name)), value: UnsafePointer(strdup(fields[name]!)))
        }
        defer {
            for field in cFields {
                free(UnsafeMutablePointer(mutating: field.name))
                free(UnsafeMutablePointer(mutating: field.value))
            }
        }
        closed.withLock { closed in
            guard !closed else { return }
            message.withCString { text in
                cFields.withUnsafeMutableBufferPointer { buffer in
                    host.pointee.log!(handler, level.rawValue, text, buffer.baseAddress, buffer.count)
                }
            }
        }
    }

    func reply(_ call: CallHandle, _ outcome: CallOutcome) {
        switch outcome {
        case .result(let bytes):
            bytes.withUnsafeBufferPointer { buffer in
                buffer.withMemoryRebound(to: CChar.self) { text in
                    host.pointee.reply_result!(call.pointer, text.baseAddress, text.count)
                }
            }
        case .error(let error, _):
            let data = error.data?.serialized() ?? []
            error.message.withCString { message in
                data.withUnsafeBufferPointer { buffer in
                    buffer.withMemoryRebound(to: CChar.self) { text in
                        host.pointee.reply_error!(
                            call.pointer, Int64(error.code), message, data.isEmpty ? nil : text.baseAddress,
                            text.count)
                    }
                }
            }
        }
    }
}

/// An `rpcd_call *`: opaque, and usable from any thread until answered.
struct CallHandle: @unchecked Sendable {
    let pointer: OpaquePointer
}
