import CRPCDHostSupport
import CRPCDModule
import RPCProtocol
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Loads module libraries with `dlopen` and keeps every image for the life of the process.
///
/// A module file is opened once, checked through that descriptor (`FileTrust`: owned by root or rpcd's user,
/// writable by no one else, nor any directory above it) and loaded from it, so no one can swap the file between
/// check and load. Loading the same unchanged file again returns the image already loaded. A file that changed since it was
/// loaded (another inode, size or modification time) is copied into a memfd and loaded from there: `dlopen`
/// of the same path would return the old image, and unloading it is not an option (see `ModuleImage`).
/// Thread-safe; loading blocks on disk I/O and the module's static initialisers.
public final class ModuleLoader: Sendable {
    private let images = Mutex<[String: ModuleImage]>([:])

    public init() {}

    public func load(path: String) throws(ModuleLoadError) -> ModuleImage {
        // One descriptor from check to load: the file checked is the file loaded, whatever happens to the path.
        let file = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard file >= 0 else {
            throw ModuleLoadError(path, errno == ENOENT ? "no such file" : String(cString: strerror(errno)))
        }
        var keepOpen = false
        defer { if !keepOpen { close(file) } }
        var info = stat()
        guard fstat(file, &info) == 0 else { throw ModuleLoadError(path, String(cString: strerror(errno))) }
        if let problem = FileTrust.problem(file: path, info: info) { throw ModuleLoadError(path, problem) }
        let identity = FileIdentity(info)
        let previous = images.withLock { $0[path] }
        if let previous, previous.identity == identity { return previous }
        // dlopen of /proc/self/fd/N loads the open file itself. A changed file (a new image under the same name)
        // is copied to a memfd first: the dynamic loader would hand back the image it already has for the path.
        let fresh = previous != nil
        let loadPath = fresh ? try Self.copyToMemoryFile(file, path: path) : "/proc/self/fd/\(file)"
        guard let handle = dlopen(loadPath, RTLD_NOW | RTLD_LOCAL) else {
            let reason = dlerror().map { String(cString: $0) } ?? "unknown error"
            // A Swift symbol the runtime lacks: the module was built by another Swift than rpcd's.
            let hint = reason.contains("undefined symbol: $s")
                ? " (a Swift symbol: was the module built with another Swift than rpcd's \(RPCSwiftVersion.compiled)?)" : ""
            throw ModuleLoadError(path, "dlopen failed: \(reason)\(hint)")
        }
        // The dynamic loader now knows an image by the name /proc/self/fd/N, for the life of the process (images
        // are never unloaded), even if it is refused below: the descriptor stays open so that no other file is
        // ever opened under that name.
        keepOpen = !fresh
        let image = try Self.image(handle, path: path, identity: identity)
        images.withLock { $0[path] = image }
        return image
    }

    private static func image(_ handle: UnsafeMutableRawPointer, path: String, identity: FileIdentity) throws(ModuleLoadError) -> ModuleImage {
        try checkSwiftVersion(handle, path: path)
        guard let symbol = dlsym(handle, RPCD_MODULE_ENTRY_SYMBOL) else {
            throw ModuleLoadError(path, "does not export \(RPCD_MODULE_ENTRY_SYMBOL) (not an rpcd module, or built for another ABI)")
        }
        let entry = unsafeBitCast(symbol, to: rpcd_module_entry_fn.self)
        guard let module = entry() else {
            throw ModuleLoadError(path, "\(RPCD_MODULE_ENTRY_SYMBOL) returned NULL")
        }
        return try ModuleImage(path: path, identity: identity, module: module)
    }

    /// A Swift module (one built with the SDK, which exports `rpcd_module_swift_version`) must come from the
    /// Swift that built rpcd: there is one runtime in the process, and Swift has no stable ABI on Linux. Checked
    /// before the entry point runs, so a mismatch is a refusal, not a crash. C modules export no such symbol.
    static func checkSwiftVersion(_ handle: UnsafeMutableRawPointer, path: String) throws(ModuleLoadError) {
        guard let symbol = dlsym(handle, "rpcd_module_swift_version") else { return }
        let version = unsafeBitCast(symbol, to: (@convention(c) () -> UnsafePointer<CChar>?).self)().map { String(cString: $0) }
        let host = "\(RPCSwiftVersion.compiled)"
        guard version == host else {
            throw ModuleLoadError(
                path, "built with Swift \(version ?? "(unknown)"), but rpcd runs the Swift \(host) runtime: rebuild the module with Swift \(host)")
        }
    }

    /// Copies the open file `source` into an anonymous memory file and returns a path `dlopen` can open as a
    /// new image.
    private static func copyToMemoryFile(_ source: Int32, path: String) throws(ModuleLoadError) -> String {
        let name = "rpcd-module-" + (path.split(separator: "/").last.map(String.init) ?? "module")
        let memory = rpcd_memfd_create(name)
        guard memory >= 0 else { throw ModuleLoadError(path, "memfd_create: \(String(cString: strerror(errno)))") }
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
