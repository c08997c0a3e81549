import CRPCDModule
import Logging
import NIOCore
import RPCJSON
import RPCLogging
import RPCProtocol

/// The `rpcd_host` table every module receives: C entry points that find their Swift state through the
/// opaque handles. Allocated once, never freed (modules may keep the pointer for the life of the process).
enum HostFunctions {
    /// Whether `reply_result` checks that a result is one JSON value: in rpcd's own process (`Isolation=none`),
    /// where the result becomes a reply. Not in a module host (`ModuleHostMain` turns it off before any thread
    /// starts): rpcd takes no host's word and checks every result where it arrives
    /// (`ModuleHostSupervisor.received`, the same -32603 and log line), so a check here would scan each result
    /// twice — 1 MiB of it costs each process about 2 million instructions.
    nonisolated(unsafe) static var checksResults = true

    nonisolated(unsafe) static let table: UnsafeMutablePointer<rpcd_host> = {
        let table = UnsafeMutablePointer<rpcd_host>.allocate(capacity: 1)
        table.initialize(to: rpcd_host(
            abi_version: UInt32(RPCD_MODULE_ABI_VERSION),
            struct_size: UInt32(MemoryLayout<rpcd_host>.size),
            reply_result: { call, json, length in
                let result: ByteBuffer? = json.flatMap { pointer in
                    let bytes = UnsafeRawBufferPointer(start: pointer, count: length)
                    return !checksResults || JSONValidation.isSingleValue(bytes) ? ByteBuffer(bytes: bytes) : nil
                }
                ModuleCallTable.shared.complete(call, result.map { .success($0) }, invalidResult: result == nil)
            },
            reply_error: { call, code, message, data, dataLength in
                var dataValue: JSONValue?
                if let data, dataLength > 0 {
                    dataValue = try? JSONValue(parsing: UnsafeRawBufferPointer(start: data, count: dataLength))
                }
                let text = message.map { String(cString: $0) } ?? "Error"
                ModuleCallTable.shared.complete(call, .failure(RPCError(code: Int(code), message: text, data: dataValue)))
            },
            log: { handler, priority, message, fields, count in
                // A handle of a handler already de-initialised (or never given) logs nothing.
                guard let context = HandlerContext.of(handler) else { return }
                var metadata: Logger.Metadata = [:]
                for index in 0..<(fields == nil ? 0 : count) {
                    let field = fields![index]
                    guard let name = field.name, let value = field.value else { continue }
                    metadata[String(cString: name).lowercased()] = "\(String(cString: value))"
                }
                context.logger.log(
                    level: Logger.Level(syslogPriority: Int(priority)), "\(message.map { String(cString: $0) } ?? "")",
                    metadata: metadata)
            },
            config_get: { handler, key in
                guard let key, let context = HandlerContext.of(handler) else { return nil }
                return context.configValue(String(cString: key))
            },
            call_cancelled: { call in ModuleCallTable.shared.isCancelled(call) ? 1 : 0 },
            emit: { handler, event, payload, length in
                guard let event, let context = HandlerContext.of(handler) else { return -1 }
                let bytes = UnsafeRawBufferPointer(start: length == 0 ? nil : payload, count: payload == nil ? 0 : length)
                return context.emit(String(cString: event), payload: bytes) ? 0 : -1
            },
            param: { call, index, length in
                let element = ModuleCallTable.shared.boundParam(call, index: index)
                length?.pointee = element?.count ?? 0
                return element?.baseAddress
            },
            state_directory: { handler in
                HandlerContext.of(handler)?.stateDirectory.map { UnsafePointer($0) }
            }))
        return table
    }()
}

package enum JSONValidation {
    /// Whether `bytes` hold exactly one JSON value (modules' results are checked so a broken module cannot
    /// send clients a broken reply).
    package static func isSingleValue(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var scanner = JSONScanner(bytes: bytes, maxDepth: 512)
        do {
            _ = try scanner.scanValue(depth: 0)
            try scanner.expectEnd()
            return true
        } catch {
            return false
        }
    }
}
