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
/// writable by no one else, nor any directory above it), and copied through it into a sealed memory file that
/// the image is mapped from: no one can swap the file between check and load, and nothing done to the file
/// afterwards (`cp` over it, truncating, rewriting or removing it) reaches code that is already mapped.
/// Mapping the file itself would not be safe: a private mapping still reads the file's current contents for
/// pages not yet touched, so `cp` over a loaded module crashed rpcd at its next call. Loading the same
/// unchanged file again returns the image already loaded; a changed one (another inode, size or modification
/// time) becomes a new image beside the old one (see `ModuleImage` for why images are never unloaded).
/// Thread-safe; loading blocks on disk I/O and the module's static initialisers.
package final class ModuleLoader: Sendable {
    private let images = Mutex<[String: ModuleImage]>([:])

    package init() {}

    package func load(path: String) throws(ModuleLoadError) -> ModuleImage {
        let file = try Self.openTrusted(path: path)
        defer { close(file) }
        return try load(checkedFile: file, path: path)
    }

    /// Opens the module file at `path` and checks it through that descriptor (`FileTrust`): one descriptor from
    /// check to load, so the file checked is the file loaded, whatever happens to the path. rpcd hands such a
    /// descriptor to a module host, which loads from it (`load(checkedFile:path:)`) without reaching the path.
    package static func openTrusted(path: String) throws(ModuleLoadError) -> Int32 {
        let file = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard file >= 0 else {
            // `path` is the first candidate when no module directory has the module (`ModuleDirectories`): say what
            // else was looked for, or a missing `libnotes.so` reads as a missing `notes.so`.
            throw ModuleLoadError(
                path, errno == ENOENT ? "no such file (nor libNAME.so for NAME.so, in any module directory)" : String(cString: strerror(errno)))
        }
        var info = stat()
        guard fstat(file, &info) == 0 else {
            let reason = String(cString: strerror(errno))
            close(file)
            throw ModuleLoadError(path, reason)
        }
        if let problem = FileTrust.problem(file: path, info: info) {
            close(file)
            throw ModuleLoadError(path, problem)
        }
        return file
    }

    /// Checks a program handler's program as `openTrusted` checks a module file, and that it can be executed; the
    /// module host starts it by its path.
    package static func checkProgram(path: String) throws(ModuleLoadError) {
        let file = try openTrusted(path: path)
        defer { close(file) }
        var info = stat()
        guard fstat(file, &info) == 0 else { throw ModuleLoadError(path, String(cString: strerror(errno))) }
        guard info.st_mode & S_IFMT == S_IFREG else { throw ModuleLoadError(path, "not a regular file") }
        guard info.st_mode & 0o111 != 0 else { throw ModuleLoadError(path, "not executable (chmod +x)") }
    }

    /// Loads the module from `file`, a descriptor `openTrusted` opened and checked (`path` names it in errors
    /// and for the module's image).
    func load(checkedFile file: Int32, path: String) throws(ModuleLoadError) -> ModuleImage {
        var info = stat()
        guard fstat(file, &info) == 0 else { throw ModuleLoadError(path, String(cString: strerror(errno))) }
        let identity = FileIdentity(info)
        let previous = images.withLock { $0[path] }
        if let previous, previous.identity == identity { return previous }
        // dlopen of /proc/self/fd/N loads the sealed copy. Each copy is a new descriptor, so a changed file is
        // a new name to the dynamic loader, which would hand back the image it already has for a name it knows.
        let name = "rpcd-module-" + (path.split(separator: "/").last.map(String.init) ?? "module")
        let copy = rpcd_sealed_copy(file, off_t(info.st_size), name)
        guard copy >= 0 else {
            let reason = switch errno {
            case EIO: "the file changed while it was read"
            case ENOEXEC: "the file is shorter than its ELF headers say (cut short, or copied over while it was read: install it with install(1), a new file renamed into place)"
            default: String(cString: strerror(errno))
            }
            throw ModuleLoadError(path, "copying into memory: \(reason)")
        }
        guard let handle = dlopen("/proc/self/fd/\(copy)", RTLD_NOW | RTLD_LOCAL) else {
            close(copy)
            let reason = dlerror().map { String(cString: $0) } ?? "unknown error"
            // A Swift symbol the runtime lacks: the module was built by another Swift than rpcd's.
            let hint = reason.contains("undefined symbol: $s")
                ? " (a Swift symbol: was the module built with another Swift than rpcd's \(RPCSwiftVersion.compiled)?)" : ""
            throw ModuleLoadError(path, "dlopen failed: \(reason)\(hint)")
        }
        // The dynamic loader now knows an image by the name /proc/self/fd/N for the life of the process (images
        // are never unloaded), even if it is refused below: the copy stays open (close-on-exec), so that no other
        // file is ever opened under that name.
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
        return try ModuleImage(path: path, identity: identity, handle: handle, module: module)
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
}
