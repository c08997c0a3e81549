/// A declaration the macros cannot turn into an interface; the compiler shows `description` at the attribute.
struct InterfaceSyntaxError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
