import RPCBinding
import RPCJSON

/// One call's params bound by rpcd to its method's declared parameters (`RPCD_METHOD_BIND_PARAMS`), as the module
/// receives them: one JSON array with an element per declared parameter (`null` for an absent one), which
/// `call()` gets as its `params_json`, and each present element's place in it, which `rpcd_host.param` returns.
///
/// The text lives in one allocation of its own, so the pointers handed to the module stay put until the call is
/// answered and its `PendingModuleCall` lets go of this. Immutable; any thread.
final class BoundCallParams: @unchecked Sendable {
    private let text: UnsafeMutableBufferPointer<CChar>
    /// Where each declared parameter's value lies in `text`; nil when it is absent.
    private let elements: [Range<Int>?]

    /// Binds `params` (as sent: JSON text, nil when absent) with `binder`'s rules; -32602 when they break them.
    init(_ params: UnsafeRawBufferPointer?, binder: ParamsBinder) throws {
        let bound = try binder.bind(text: params ?? UnsafeRawBufferPointer(start: nil, count: 0))
        var bytes: [UInt8] = [UInt8(ascii: "[")]
        var elements: [Range<Int>?] = []
        for (position, value) in bound.values.enumerated() {
            if position > 0 { bytes.append(UInt8(ascii: ",")) }
            if let value {
                let start = bytes.count
                bytes += value.serialized()
                elements.append(start..<bytes.count)
            } else {
                bytes += Array("null".utf8)
                elements.append(nil)
            }
        }
        bytes.append(UInt8(ascii: "]"))
        text = .allocate(capacity: bytes.count)
        _ = text.initialize(from: bytes.lazy.map { CChar(bitPattern: $0) })
        self.elements = elements
    }

    deinit { text.deallocate() }

    /// The whole array, for `call()`'s `params_json`.
    var array: UnsafeRawBufferPointer { UnsafeRawBufferPointer(text) }

    /// The text of parameter `index`; nil when it is absent or not declared.
    func element(_ index: Int) -> UnsafeBufferPointer<CChar>? {
        guard elements.indices.contains(index), let range = elements[index] else { return nil }
        return UnsafeBufferPointer(rebasing: UnsafeBufferPointer(text)[range])
    }
}
