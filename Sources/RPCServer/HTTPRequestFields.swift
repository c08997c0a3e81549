import NIOHTTP1

/// The headers of a request head that `HTTPRequestHandler` and `HTTPRequestPolicy` read, found in one pass
/// over the headers: looking each up by name walks them all again and allocates an array per lookup, a cost
/// every keep-alive request paid five times over. Names compare case-insensitively, as HTTP's do.
struct HTTPRequestFields {
    /// The first `Host:`, and how many there were (a request needs exactly one).
    var host: String?
    var hostCount = 0
    var origin: String?
    var contentType: String?
    /// The first `Content-Length:`, as a number (nil: absent, or not a number).
    var contentLength: Int?
    /// A body follows the head: a non-zero `Content-Length:`, or a `Transfer-Encoding:`.
    var hasBody = false

    init(_ headers: HTTPHeaders) {
        for (name, value) in headers {
            switch name.utf8.count {
            case 4 where name.isASCIICaseInsensitive("host"):
                if hostCount == 0 { host = value }
                hostCount += 1
            case 6 where name.isASCIICaseInsensitive("origin"):
                if origin == nil { origin = value }
            case 12 where name.isASCIICaseInsensitive("content-type"):
                if contentType == nil { contentType = value }
            case 14 where name.isASCIICaseInsensitive("content-length"):
                if value != "0" { hasBody = true }
                if contentLength == nil { contentLength = Int(value) }
            case 17 where name.isASCIICaseInsensitive("transfer-encoding"):
                hasBody = true
            default:
                break
            }
        }
    }
}

extension String {
    /// Whether this equals `lowercase` (lower-case ASCII letters, digits and `-`), ignoring ASCII case.
    fileprivate func isASCIICaseInsensitive(_ lowercase: StaticString) -> Bool {
        var mine = utf8.makeIterator()
        return lowercase.withUTF8Buffer { theirs in
            for byte in theirs {
                guard let other = mine.next(), other | 0x20 == byte | 0x20 else { return false }
            }
            return mine.next() == nil
        }
    }
}
