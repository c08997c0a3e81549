import XCTest

extension XCTestCase {
    /// A JSON-RPC 2.0 request's text, `params` as given (JSON text).
    package func requestText(_ method: String, id: Int, params: String = "[]") -> String {
        #"{"jsonrpc":"2.0","method":"\#(method)","params":\#(params),"id":\#(id)}"#
    }
}
