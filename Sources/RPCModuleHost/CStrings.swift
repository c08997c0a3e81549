#if canImport(Glibc)
import Glibc
#endif

/// C's `char *const argv[]`: strings copied for the length of a call, the array ended by NULL (execve's argv and
/// envp).
enum CStrings {
    static func with<T>(_ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> T) -> T {
        var pointers = strings.map { strdup($0) } + [nil]
        defer { for pointer in pointers { free(pointer) } }
        return pointers.withUnsafeMutableBufferPointer { body($0.baseAddress!) }
    }
}
