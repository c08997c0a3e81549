/// What a module host process runs for its handler.
package enum ModuleHostKind: Sendable {
    /// A module (`Module=`), loaded into the host.
    case module
    /// A program (`Exec=`), started by the host and spoken to in lines (docs/HANDLER-PROTOCOL.md).
    case program
    /// Command methods (`[Command]`), each call a command the host runs (`HandlerCommand`).
    case commands
}
