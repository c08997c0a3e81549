/// Why a module host did not come up.
struct ModuleHostStartError: Error, CustomStringConvertible {
    var reason: String
    var description: String { reason }
}
