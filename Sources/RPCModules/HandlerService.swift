package import RPCCore
package import RPCModuleHost

/// A configured handler serving its service, wherever its module runs: in rpcd's process (`ModuleService`,
/// `Isolation=none`) or in a module host process (`IsolatedModuleService`, `Isolation=process`).
package protocol HandlerService: AnyObject, RPCService {
    var configuration: HandlerConfiguration { get }
    /// Stops taking calls; the module is de-initialised once it has answered its last call.
    func retire()
}
