#if canImport(Glibc)
import Glibc
#endif

/// Where a handler's bare `Module=` name is looked up: each directory in order, `NAME.so` then `libNAME.so`,
/// the first file that exists wins (as `PATH` does).
///
/// The default puts the administrator's own directory before the package's, as systemd puts
/// `/usr/local/lib/systemd/system` before `/usr/lib/systemd/system`: a module built and installed locally never
/// has to go into the directory dpkg owns, and one of the same name there takes its place. Either directory may be
/// missing. Every file found is still checked (owner, mode) before it is loaded (`FileTrust`).
package struct ModuleDirectories: Sendable, Equatable {
    package static let standard = ModuleDirectories(["/usr/local/lib/rpcd/modules", "/usr/lib/rpcd/modules"])

    /// In search order, without repeats.
    package let directories: [String]

    package init(_ directories: [String]) {
        var seen = Set<String>()
        self.directories = directories.filter { seen.insert($0).inserted }
    }

    /// The file `module` names: the first that exists, or (when none does) the first candidate, for the error.
    package func path(for module: String) -> String {
        let candidates = directories.flatMap { ["\($0)/\(module).so", "\($0)/lib\(module).so"] }
        return candidates.first { access($0, F_OK) == 0 } ?? candidates.first ?? "\(module).so"
    }
}
