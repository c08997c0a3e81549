#if canImport(Glibc)
import Glibc
#endif
package import Foundation
package import RPCJSON
package import RPCProtocol
import XCTest

/// A plain blocking socket that writes whatever bytes a test wants, so hostile input reaches the daemon
/// exactly as written, independent of rpcd's own client library. Every receive has a timeout.
package final class RawConnection {
    private let fd: Int32

    /// `receiveBufferSize` sets `SO_RCVBUF` before connecting (a small one makes a peer that does not read
    /// fill up quickly).
    package init(_ endpoint: RPCEndpoint, receiveTimeout: TimeInterval = 10, receiveBufferSize: Int32? = nil) throws {
        switch endpoint {
        case .tcp(let host, let port), .tls(let host, let port), .http(let host, let port), .https(let host, let port):
            // for a TLS endpoint, the bare TCP connection
            fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            if var size = receiveBufferSize {
                setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
            }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            inet_pton(AF_INET, host, &address.sin_addr)
            let result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard result == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        case .unix(let path), .httpUnix(let path):
            fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { raw in
                raw.copyBytes(from: path.utf8.prefix(raw.count - 1))
            }
            let result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            guard result == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        }
        var timeout = timeval(tv_sec: Int(receiveTimeout), tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    package func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EPIPE) }
            offset += sent
        }
    }

    package func sendFrame(_ payload: String) throws {
        try send(WireFrame.bytes(payload))
    }

    /// Reads exactly `count` bytes; nil on orderly close before any of them.
    private func receive(_ count: Int) throws -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: count)
        var received = 0
        while received < count {
            let n = buffer[received...].withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 {
                guard received == 0 else { throw POSIXError(.ECONNRESET) }
                return nil
            }
            if n < 0 {
                if errno == EINTR { continue }
                throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
            }
            received += n
        }
        return buffer
    }

    /// The next frame's payload as text; nil when the server closed the connection.
    package func receiveFrame() throws -> String? {
        guard let header = try receive(4) else { return nil }
        let length = header.reduce(0) { $0 << 8 | Int($1) }
        guard let body = try receive(length) else { throw POSIXError(.ECONNRESET) }
        return String(decoding: body, as: UTF8.self)
    }

    package func receiveJSON(file: StaticString = #filePath, line: UInt = #line) throws -> JSONValue {
        let text = try XCTUnwrap(try receiveFrame(), "connection closed instead of a reply", file: file, line: line)
        return try JSONValue(parsing: text)
    }

    /// Round trip of one request payload.
    package func call(_ payload: String) throws -> JSONValue {
        try sendFrame(payload)
        return try receiveJSON()
    }

    /// Whether the peer has closed: a read returns EOF (or reset) within the receive timeout.
    package func isClosedByPeer() -> Bool {
        var byte: UInt8 = 0
        let n = recv(fd, &byte, 1, 0)
        return n == 0 || (n < 0 && errno == ECONNRESET)
    }

    /// Whether the peer closes within the receive timeout, whatever it sends first (a TLS alert, say).
    package func isClosedByPeerAfterAnyReply() -> Bool {
        var bytes = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = recv(fd, &bytes, bytes.count, 0)
            if n > 0 { continue }
            return n == 0 || (n < 0 && errno == ECONNRESET)
        }
    }
}
