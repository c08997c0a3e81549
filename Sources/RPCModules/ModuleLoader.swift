import CRPCDHostSupport
import CRPCDModule
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Loads module libraries with `dlopen` and keeps every image for the life of the process.
///
/// Loading the same unchanged file again returns the image already loaded. A file that changed since it was
/// loaded (another inode, size or modification time) is copied into a memfd and loaded from there: `dlopen`
/// of the same path would return the old image, and unloading it is not an option (see `ModuleImage`).
/// Thread-safe; loading blocks on disk I/O and the module's static initialisers.
public final class ModuleLoader: Sendable {
    private let images = Mutex<[String: ModuleImage]>([:])

    public init() {}

    public func load(path: String) throws(ModuleLoadError) -> ModuleImage {
        let identity = try FileIdentity(path: path)
        let previous = images.withLock { $0[path] }
        if let previous, previous.identity == identity { return previous }
        let image = try Self.open(path: path, identity: identity, fresh: previous != nil)
        images.withLock { $0[path] = image }
        return image
    }

    private static func open(path: String, identity: FileIdentity, fresh: Bool) throws(ModuleLoadError) -> ModuleImage {
        let loadPath = fresh ? try copyToMemoryFile(path) : path
        guard let handle = dlopen(loadPath, RTLD_NOW | RTLD_LOCAL) else {
            throw ModuleLoadError(path, "dlopen failed: \(dlerror().map { String(cString: $0) } ?? "unknown error")")
        }
        guard let symbol = dlsym(handle, RPCD_MODULE_ENTRY_SYMBOL) else {
            throw ModuleLoadError(path, "does not export \(RPCD_MODULE_ENTRY_SYMBOL) (not an rpcd module, or built for another ABI)")
        }
        let entry = unsafeBitCast(symbol, to: rpcd_module_entry_fn.self)
        guard let module = entry() else {
            throw ModuleLoadError(path, "\(RPCD_MODULE_ENTRY_SYMBOL) returned NULL")
        }
        return try ModuleImage(path: path, identity: identity, module: module)
    }

    /// Copies the file into an anonymous memory file and returns a path `dlopen` can open as a new image.
    private static func copyToMemoryFile(_ path: String) throws(ModuleLoadError) -> String {
        let name = "rpcd-module-" + (path.split(separator: "/").last.map(String.init) ?? "module")
        let memory = rpcd_memfd_create(name)
        guard memory >= 0 else { throw ModuleLoadError(path, "memfd_create: \(String(cString: strerror(errno)))") }
        let source = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard source >= 0 else { throw ModuleLoadError(path, "open: \(String(cString: strerror(errno)))") }
        defer { close(source) }
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = read(source, &buffer, buffer.count)
            if count == 0 { break }
            guard count > 0 else { throw ModuleLoadError(path, "read: \(String(cString: strerror(errno)))") }
            var written = 0
            while written < count {
                let n = buffer[written..<count].withUnsafeBytes { write(memory, $0.baseAddress, $0.count) }
                guard n > 0 else { throw ModuleLoadError(path, "copying to memory: \(String(cString: strerror(errno)))") }
                written += n
            }
        }
        // The descriptor stays open (close-on-exec): it is what keeps the image's file alive.
        return "/proc/self/fd/\(memory)"
    }
}
