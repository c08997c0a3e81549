/// The six kinds of JSON value, as reported by `JSONScanner.scanValue(depth:)` and `JSONValue.kind`.
public enum JSONKind: UInt8, Sendable {
    case object, array, string, number, bool, null
}
