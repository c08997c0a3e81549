/// The Swift version (major.minor) this code was compiled with. Swift has no stable ABI on Linux, so a Swift
/// module must have been built by the same Swift as the runtime the daemon runs (the package ships one under
/// /usr/lib/rpcd/swift). The module SDK exports its copy of this value as `rpcd_module_swift_version`, and the
/// daemon compares it with its own before it runs any other code of the module (docs/MODULES.md).
///
/// Each new toolchain adds a line at the top; a version past the last line reads as that line with "+".
public enum RPCSwiftVersion {
    public static var compiled: StaticString {
        #if compiler(>=6.5)
        "6.5+"
        #elseif compiler(>=6.4)
        "6.4"
        #elseif compiler(>=6.3)
        "6.3"
        #elseif compiler(>=6.2)
        "6.2"
        #elseif compiler(>=6.1)
        "6.1"
        #else
        "6.0 or older"
        #endif
    }
}
