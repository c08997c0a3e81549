#if canImport(Glibc)
import Glibc
#endif

/// Where `rpcd-module-host` is: beside the running executable (a build tree, where the tests run too), in
/// `../lib/rpcd/` from it (`make install` with any `PREFIX`), else in `/usr/lib/rpcd/`.
package enum ModuleHostExecutable {
    package static let installed = "/usr/lib/rpcd/rpcd-module-host"
    package static let name = "rpcd-module-host"

    package static func locate() -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        if length > 0 {
            let executable = String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if let slash = executable.lastIndex(of: "/") {
                let directory = executable[..<slash]
                for candidate in [directory + "/" + name, directory + "/../lib/rpcd/" + name] where access(candidate, X_OK) == 0 {
                    return String(candidate)
                }
            }
        }
        return installed
    }
}
