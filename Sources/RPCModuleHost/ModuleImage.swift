import CRPCDModule
package import RPCBinding
import RPCJSON
import RPCProtocol

#if canImport(Glibc)
package import Glibc
#endif

/// One loaded module library and its validated descriptor. Images are never unloaded: the Swift runtime
/// keeps pointers into every image it has seen, and `dlclose` would leave them dangling.
///
/// Immutable after loading; safe to share between threads.
package final class ModuleImage: @unchecked Sendable {
    /// The configured path (for messages), not the sealed copy the image was mapped from.
    package let path: String
    let identity: FileIdentity
    /// What `dlopen` returned for the image (never closed): for `dlsym` into this image, whatever file it came from.
    let handle: UnsafeMutableRawPointer
    /// The module's descriptor, copied so that fields its header did not have yet read as NULL or 0.
    let module: rpcd_module
    /// The module's name, version, description and methods, copied out of the C structures.
    package let name: String
    package let version: String
    package let summary: String
    package let methods: [RPCMethodDescriptor]
    /// The events the module declares (`rpcd_module.events`; none for modules built before rpcd 0.3).
    package let events: [RPCEventDescriptor]
    /// For each method (by index), the binder rpcd applies before calling it: set for methods with
    /// `RPCD_METHOD_BIND_PARAMS`, nil for those that take their params as sent.
    let binders: [ParamsBinder?]
    /// The `[Config]` keys the module reads (`rpcd_module.config_keys`); nil when it does not say, and then its
    /// handlers' `[Config]` is not checked.
    package let configKeys: [String]?
    /// What the module declares each `[Config]` value must be (`config_params`, rpcd 0.6); empty: unchecked.
    package let configParams: [RPCParam]

    init(
        path: String, identity: FileIdentity, handle: UnsafeMutableRawPointer, module: UnsafePointer<rpcd_module>
    ) throws(ModuleLoadError) {
        self.path = path
        self.identity = identity
        self.handle = handle
        let header = UnsafeRawPointer(module)
        let abiVersion = header.load(as: UInt32.self)
        guard abiVersion == RPCD_MODULE_ABI_VERSION else {
            throw ModuleLoadError(path, "built for module ABI \(abiVersion); this rpcd speaks ABI \(RPCD_MODULE_ABI_VERSION)")
        }
        let size = Int(header.load(fromByteOffset: MemoryLayout<UInt32>.size, as: UInt32.self))
        guard size >= Self.firstModuleSize else {
            throw ModuleLoadError(path, "rpcd_module.struct_size is \(size), smaller than ABI \(RPCD_MODULE_ABI_VERSION)'s \(Self.firstModuleSize)")
        }
        let m = Self.descriptor(module, size: size)
        self.module = m
        guard m.`init` != nil, m.call != nil else {
            throw ModuleLoadError(path, "rpcd_module has no init or call function")
        }
        guard let name = m.name.map({ String(cString: $0) }), ServiceName.isValid(name) else {
            throw ModuleLoadError(path, "the module name is missing or not a service name (\(ServiceName.rule))")
        }
        self.name = name
        self.version = m.version.map { String(cString: $0) } ?? ""
        self.summary = m.description.map { String(cString: $0) } ?? ""
        guard !version.isEmpty else { throw ModuleLoadError(path, "the module has no version") }
        guard m.n_methods == 0 || m.methods != nil else { throw ModuleLoadError(path, "n_methods is \(m.n_methods) but methods is NULL") }
        (self.methods, self.binders) = try Self.readMethods(m, path: path)
        guard m.n_events == 0 || m.events != nil else { throw ModuleLoadError(path, "n_events is \(m.n_events) but events is NULL") }
        self.events = try Self.readEvents(m, path: path)
        let declaredKeys = m.config_keys.map { keys in
            var names: [String] = []
            while let key = keys[names.count] { names.append(String(cString: key)) }
            return names
        }
        guard m.n_config_params == 0 || m.config_params != nil else {
            throw ModuleLoadError(path, "n_config_params is \(m.n_config_params) but config_params is NULL")
        }
        var configParams: [RPCParam] = []
        for index in 0..<m.n_config_params {
            let param = m.config_params[index]
            guard let name = param.name.map({ String(cString: $0) }), !name.isEmpty else {
                throw ModuleLoadError(path, "config parameter \(index) has no name")
            }
            let schema = try Self.schema(param.schema_json, path: path, what: "[Config] key '\(name)'")
            configParams.append(RPCParam(name, schema: schema, optional: true, summary: param.summary.map { String(cString: $0) } ?? ""))
        }
        self.configParams = configParams
        // A key whose value is declared is a key the module reads.
        let paramKeys = configParams.map(\.name).filter { !(declaredKeys ?? []).contains($0) }
        self.configKeys = declaredKeys.map { $0 + paramKeys } ?? (paramKeys.isEmpty ? nil : paramKeys)
    }

    /// Checks `configuration`'s `[Config]` against the keys the module declares, with the errors `[Handler]`
    /// keys get (file, line, "did you mean"); nothing when the module declares none.
    package func checkConfig(of configuration: HandlerConfiguration) throws(ModuleLoadError) {
        guard let configKeys else { return }
        do {
            try configuration.checkConfigKeys(against: configKeys)
            try configuration.checkConfigValues(against: configParams)
        } catch {
            throw ModuleLoadError(path, "handler '\(configuration.name)': \(error)")
        }
    }

    /// The size of ABI 1's first `rpcd_module`, up to `deinit`: what a module built against rpcd 0.1's header
    /// has. Fields after it (rpcd 0.3's `events`, `n_events`, `cancel`) are read only when the module's
    /// `struct_size` covers them.
    static let firstModuleSize = MemoryLayout<rpcd_module>.offset(of: \rpcd_module.events)!

    /// The module's descriptor as this rpcd's `rpcd_module`: the `size` bytes the module has, the rest zero
    /// (NULL, 0), so that a module built against an older header is never read past its end.
    private static func descriptor(_ module: UnsafePointer<rpcd_module>, size: Int) -> rpcd_module {
        var copy = rpcd_module()
        withUnsafeMutableBytes(of: &copy) { target in
            target.copyMemory(from: UnsafeRawBufferPointer(start: module, count: min(size, target.count)))
        }
        return copy
    }

    private static func readMethods(
        _ m: rpcd_module, path: String
    ) throws(ModuleLoadError) -> ([RPCMethodDescriptor], [ParamsBinder?]) {
        guard let first = m.methods else { return ([], []) }
        // The array's element size is the module's sizeof(rpcd_method), which grows with the ABI: step by
        // the module's struct_size, never by our own MemoryLayout.
        let stride = Int(first.pointee.struct_size)
        // rpcd 0.3's rpcd_method ended at errors_json: a module built against it is still loaded.
        let errorsOffset = MemoryLayout<rpcd_method>.offset(of: \rpcd_method.errors_json)!
        guard stride >= errorsOffset else {
            throw ModuleLoadError(path, "rpcd_method.struct_size is \(stride), smaller than ABI \(RPCD_MODULE_ABI_VERSION)'s \(errorsOffset)")
        }
        var methods: [RPCMethodDescriptor] = []
        var binders: [ParamsBinder?] = []
        var names = Set<String>()
        for index in 0..<m.n_methods {
            let address = UnsafeRawPointer(first) + Int(index) * stride
            // Read field by field up to the module's struct_size: its struct may end before errors_json.
            var method = rpcd_method()
            withUnsafeMutableBytes(of: &method) { $0.copyMemory(from: UnsafeRawBufferPointer(start: address, count: min(stride, $0.count))) }
            guard let name = method.name.map({ String(cString: $0) }), MemberName.isValid(name) else {
                throw ModuleLoadError(path, "method \(index) has a missing or invalid name (\(MemberName.rule))")
            }
            guard names.insert(name).inserted else { throw ModuleLoadError(path, "method '\(name)' is declared twice") }
            guard method.n_params == 0 || method.params != nil else {
                throw ModuleLoadError(path, "method '\(name)': n_params is \(method.n_params) but params is NULL")
            }
            var params: [RPCParam] = []
            for p in 0..<method.n_params {
                let param = method.params![Int(p)]
                guard let paramName = param.name.map({ String(cString: $0) }), MemberName.isValid(paramName) else {
                    throw ModuleLoadError(path, "method '\(name)': parameter \(p) has a missing or invalid name")
                }
                params.append(RPCParam(
                    paramName, schema: try schema(param.schema_json, path: path, what: "'\(name)' parameter '\(paramName)'"),
                    optional: param.flags & RPCD_PARAM_OPTIONAL != 0,
                    summary: param.summary.map { String(cString: $0) } ?? ""))
            }
            let resultName = method.result_name.map { String(cString: $0) } ?? "result"
            guard MemberName.isValid(resultName) else {
                throw ModuleLoadError(path, "method '\(name)': result_name '\(resultName)' is not \(MemberName.rule)")
            }
            let result = method.result_schema_json == nil ? nil : RPCParam(
                resultName, schema: try schema(method.result_schema_json, path: path, what: "'\(name)' result"))
            let binds = method.flags & RPCD_METHOD_BIND_PARAMS != 0
            if binds && method.flags & RPCD_METHOD_BY_POSITION != 0 {
                throw ModuleLoadError(
                    path, "method '\(name)' has both RPCD_METHOD_BIND_PARAMS and RPCD_METHOD_BY_POSITION (a list of any length has no declared positions to bind)")
            }
            methods.append(RPCMethodDescriptor(
                name: name, summary: method.summary.map { String(cString: $0) } ?? "", params: params, result: result,
                errors: try errors(method.errors_json, path: path, method: name), flags: Self.flags(method.flags)))
            binders.append(binds ? ParamsBinder(params) : nil)
        }
        return (methods, binders)
    }

    private static func readEvents(_ m: rpcd_module, path: String) throws(ModuleLoadError) -> [RPCEventDescriptor] {
        guard let first = m.events else { return [] }
        // As for methods: step by the module's sizeof(rpcd_event), which later headers may grow.
        let stride = Int(first.pointee.struct_size)
        guard stride >= MemoryLayout<rpcd_event>.size else {
            throw ModuleLoadError(path, "rpcd_event.struct_size is \(stride), smaller than ABI \(RPCD_MODULE_ABI_VERSION)'s \(MemoryLayout<rpcd_event>.size)")
        }
        var events: [RPCEventDescriptor] = []
        var names = Set<String>()
        for index in 0..<m.n_events {
            let event = (UnsafeRawPointer(first) + Int(index) * stride).assumingMemoryBound(to: rpcd_event.self).pointee
            guard let name = event.name.map({ String(cString: $0) }), MemberName.isValid(name) else {
                throw ModuleLoadError(path, "event \(index) has a missing or invalid name (\(MemberName.rule))")
            }
            guard names.insert(name).inserted else { throw ModuleLoadError(path, "event '\(name)' is declared twice") }
            events.append(RPCEventDescriptor(
                name: name, summary: event.summary.map { String(cString: $0) } ?? "",
                schema: try schema(event.schema_json, path: path, what: "event '\(name)'")))
        }
        return events
    }

    /// The ABI's method flags as the descriptor's; bits this rpcd does not know are ignored.
    private static func flags(_ bits: UInt32) -> RPCMethodDescriptor.Flags {
        var flags: RPCMethodDescriptor.Flags = []
        if bits & RPCD_METHOD_MAY_BLOCK != 0 { flags.insert(.mayBlock) }
        if bits & RPCD_METHOD_READ_ONLY != 0 { flags.insert(.readOnly) }
        if bits & RPCD_METHOD_BY_POSITION != 0 { flags.insert(.byPosition) }
        if bits & RPCD_METHOD_ANY_PARAMS != 0 { flags.insert(.anyParams) }
        return flags
    }

    /// `rpcd_method.errors_json`: an array of `{"code": N, "message": "..."}`, N an integer outside the reserved
    /// range -32768…-32000.
    private static func errors(_ text: UnsafePointer<CChar>?, path: String, method: String) throws(ModuleLoadError) -> [RPCError] {
        guard let text else { return [] }
        let problem = "method '\(method)': errors_json must be a JSON array of {\"code\": N, \"message\": \"...\"}, N an integer outside -32768…-32000"
        guard let value = try? JSONValue(parsing: String(cString: text)), case .array(let entries) = value else {
            throw ModuleLoadError(path, problem)
        }
        var errors: [RPCError] = []
        for entry in entries {
            guard case .object(let members) = entry, case .number(let number)? = members["code"],
                let code = Int(number), !RPCError.Code.reserved.contains(code),
                case .string(let message)? = members["message"]
            else { throw ModuleLoadError(path, problem) }
            errors.append(RPCError(code: code, message: message))
        }
        return errors
    }

    private static func schema(_ text: UnsafePointer<CChar>?, path: String, what: String) throws(ModuleLoadError) -> JSONValue {
        guard let text else { return [:] }
        do {
            return try JSONValue(parsing: String(cString: text))
        } catch {
            throw ModuleLoadError(path, "the JSON Schema of \(what) is not valid JSON: \(error)")
        }
    }
}

/// Why a module was refused; `description` names the file and the reason.
package struct ModuleLoadError: Error, Hashable, Sendable, CustomStringConvertible {
    package var path: String
    package var reason: String

    package init(_ path: String, _ reason: String) {
        self.path = path
        self.reason = reason
    }

    package var description: String { "module \(path) refused: \(reason)" }
}

/// What identifies a file's contents well enough to notice it was replaced.
package struct FileIdentity: Hashable, Sendable {
    package var device: UInt64
    package var inode: UInt64
    package var size: Int64
    package var modified: Int64
    package var modifiedNanoseconds: Int64

    /// The identity of the file at `path` now; nil when it cannot be read.
    package init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        self.init(info)
    }

    package init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        modified = Int64(info.st_mtim.tv_sec)
        modifiedNanoseconds = Int64(info.st_mtim.tv_nsec)
    }
}
