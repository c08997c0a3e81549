/// The other end of a module link sent something that is not a message; the link is closed.
package struct ModuleLinkError: Error, CustomStringConvertible {
    package var description: String
    package init(_ description: String) { self.description = description }
}
