/*
 * jsonrpc-reference: the yardstick for rpcd.ping (issue 39). A single-threaded C++ server that does the protocol
 * work rpcd does for `rpcd.ping`, as fast as we could write it, and nothing else:
 *
 *   - rpcd's framing: a 4-byte big-endian length, then one JSON-RPC message; a length above rpcd's default
 *     MaxFrameSize= is answered with -32000 (id null) and the connection closed, as rpcd does;
 *   - level-triggered epoll on one TCP listener, non-blocking sockets, one event loop;
 *   - every frame validated as strict JSON with simdjson's On Demand API, parsed in place in the connection's
 *     input buffer (which keeps simdjson's padding after its data): every value walked and every string
 *     (keys too) unescaped, so `["a":1]` or a bad escape is refused, not skipped;
 *   - the JSON-RPC 2.0 checks in rpcd's order with rpcd's codes, messages and data (RPCEnvelopeParser.swift):
 *     -32700, -32600, -32002 past MaxNestingDepth=, -32001 past MaxBatchLength=, -32601, and -32602 for
 *     params given to rpcd.ping (ParamsBinder.requireNone);
 *   - methods looked up in a hash table of 16 names (rpcd's built-in methods; only rpcd.ping is implemented:
 *     the others answer as a method rpcd does not have, and the tests do not call them);
 *   - the id copied byte for byte into the reply; batches and notifications; every reply of a read burst in
 *     one write().
 *
 *     jsonrpc-reference [--listen HOST:PORT]      (default 127.0.0.1:0; prints "listening on HOST:PORT")
 *
 * Where rpcd and this program could differ: a -32700's data.detail (rpcd names the byte and offset of the
 * first problem; this names simdjson's error), and a frame broken in two ways, where simdjson's stage 1 (UTF-8,
 * unclosed strings, control characters, anywhere in the frame) may find a problem before rpcd's left-to-right
 * scan meets its depth or batch limit. Not done, because rpcd.ping does not need it: per-peer budgets,
 * MaxCallsPerConnection=, timeouts, other listeners. bench/test_reference.py checks it against rpcd.
 *
 * Build: `make bench-reference` (g++ -O2 -march=x86-64-v3 -mpclmul: without both, simdjson's On Demand falls
 * back to its portable kernel). Stops on SIGTERM or SIGINT.
 */
#include <arpa/inet.h>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <immintrin.h>
#include <memory>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string>
#include <string_view>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <vector>

#include <simdjson.h>

using namespace simdjson;

namespace {

// rpcd's defaults (Sources/RPCProtocol/RPCLimits.swift; bench/test_reference.py checks they are the same).
constexpr size_t max_frame_size = 4 << 20;
constexpr int max_nesting_depth = 64;
constexpr size_t max_batch_length = 1024;

// ---------------------------------------------------------------------------------------------------------
// Replies, written straight into the connection's output: `{"jsonrpc":"2.0",...,"id":ID}`, as RPCReplyWriter.

// A growable byte buffer (a std::vector's insert cost more than the rest of a pong's reply).
struct Output {
    char *bytes = nullptr;
    size_t length = 0, capacity = 0;

    ~Output() { free(bytes); }
    size_t size() const { return length; }
    bool empty() const { return length == 0; }
    char *data() { return bytes; }
    void truncate(size_t size) { length = size; }
    void clear() { length = 0; }
    // Room for `count` more bytes.
    void reserve(size_t count) {
        if (length + count <= capacity) return;
        size_t grown = capacity ? capacity : 16384;
        while (grown < length + count) grown *= 2;
        bytes = static_cast<char *>(realloc(bytes, grown));
        if (!bytes) {
            perror("realloc");
            exit(1);
        }
        capacity = grown;
    }
    // `count` bytes to fill later (a frame's length).
    size_t skip(size_t count) {
        reserve(count);
        length += count;
        return length - count;
    }
    void add(std::string_view s) {
        reserve(s.size());
        memcpy(bytes + length, s.data(), s.size());
        length += s.size();
    }
    void add(char c) {
        reserve(1);
        bytes[length++] = c;
    }
    void add_int(long long n) {
        char text[24];
        int length = snprintf(text, sizeof text, "%lld", n);
        add(std::string_view(text, (size_t)length));
    }
    // A JSON string literal as JSONString.appendQuoted writes it: '"', '\\' and control characters escaped.
    void add_quoted(std::string_view s) {
        add('"');
        for (unsigned char c : s) {
            switch (c) {
            case '"': add("\\\""); break;
            case '\\': add("\\\\"); break;
            case '\b': add("\\b"); break;
            case '\f': add("\\f"); break;
            case '\n': add("\\n"); break;
            case '\r': add("\\r"); break;
            case '\t': add("\\t"); break;
            default:
                if (c < 0x20) {
                    char escape[8];
                    snprintf(escape, sizeof escape, "\\u%04X", c);
                    add(escape);
                } else {
                    add((char)c);
                }
            }
        }
        add('"');
    }
};

constexpr std::string_view null_id = "null";

enum Code { parse_error = -32700, invalid_request = -32600, method_not_found = -32601, invalid_params = -32602,
            frame_too_large = -32000, batch_too_large = -32001, nesting_too_deep = -32002 };

const char *message_for(int code) {
    switch (code) {
    case parse_error: return "Parse error";
    case invalid_request: return "Invalid Request";
    case method_not_found: return "Method not found";
    case invalid_params: return "Invalid params";
    case frame_too_large: return "Frame too large";
    case batch_too_large: return "Batch too large";
    case nesting_too_deep: return "Nesting too deep";
    }
    return "Server error";
}

// `{"jsonrpc":"2.0","error":{"code":C,"message":M,"data":{"KEY":TEXT}},"id":ID}` with a string datum.
void write_error(Output &out, int code, const char *key, std::string_view text, std::string_view id) {
    out.add(R"({"jsonrpc":"2.0","error":{"code":)");
    out.add_int(code);
    out.add(R"(,"message":")");
    out.add(message_for(code));
    out.add(R"(","data":{")");
    out.add(key);
    out.add(R"(":)");
    out.add_quoted(text);
    out.add(R"(}},"id":)");
    out.add(id);
    out.add('}');
}

// The same with `"data":{"limit":N}` (and `"length":L` first for -32000).
void write_limit_error(Output &out, int code, long long limit, std::string_view id, long long length = -1) {
    out.add(R"({"jsonrpc":"2.0","error":{"code":)");
    out.add_int(code);
    out.add(R"(,"message":")");
    out.add(message_for(code));
    out.add(R"(","data":{)");
    if (length >= 0) {
        out.add(R"("length":)");
        out.add_int(length);
        out.add(',');
    }
    out.add(R"("limit":)");
    out.add_int(limit);
    out.add(R"(}},"id":)");
    out.add(id);
    out.add('}');
}

// ---------------------------------------------------------------------------------------------------------
// Methods: a 16-name open-addressing table keyed by the method's bytes (FNV-1a), as big as rpcd's catalogue.

enum class Method { none, ping, other };

struct MethodTable {
    static constexpr size_t slots = 32;  // hash() gives 5 bits
    struct Slot { std::string_view name; Method method = Method::none; };
    Slot table[slots];

    // The first and last eight bytes and the length, multiplied (Fibonacci hashing): a name costs the same
    // whatever its length. The reads may pass the name's end: names lie in the frame or in the unescaped
    // strings, both followed by padding.
    static uint64_t hash(std::string_view name) {
        uint64_t first = 0, last = 0;
        memcpy(&first, name.data(), 8);
        if (name.size() < 8) first &= (1ull << (8 * name.size())) - 1;
        else memcpy(&last, name.data() + name.size() - 8, 8);
        return ((first ^ (last >> 1) ^ name.size()) * 0x9E3779B97F4A7C15ull) >> 59;
    }
    std::string names[16];  // copies with room to read eight bytes past their end
    size_t count = 0;
    void insert(std::string_view literal, Method method) {
        names[count] = std::string(literal) + std::string(8, '\0');
        std::string_view name(names[count++].data(), literal.size());
        size_t i = hash(name) & (slots - 1);
        while (table[i].method != Method::none) i = (i + 1) & (slots - 1);
        table[i] = {name, method};
    }
    Method find(std::string_view name) const {
        for (size_t i = hash(name) & (slots - 1);; i = (i + 1) & (slots - 1)) {
            if (table[i].method == Method::none) return Method::none;
            if (table[i].name == name) return table[i].method;
        }
    }
    MethodTable() {
        insert("rpcd.ping", Method::ping);
        for (const char *name : {"rpcd.info", "rpcd.metrics", "rpcd.logLevel", "rpcd.setLogLevel", "rpcd.reload",
                                 "rpc.discover", "rpc.describe", "rpc.subscribe", "rpc.unsubscribe", "rpc.cancel",
                                 "echo.echo", "calc.add", "kv.get", "kv.set", "sysinfo.hostname"})
            insert(name, Method::other);
    }
};

const MethodTable methods;

// ---------------------------------------------------------------------------------------------------------
// Validation: a walk over every value of a frame with simdjson's On Demand API.

enum class Failure { none, syntax, too_deep, batch_too_large };

struct Walk {
    ondemand::parser parser;
    std::unique_ptr<uint8_t[]> strings;  // unescaped strings of the frame being parsed
    size_t strings_capacity = 0;
    uint8_t *next_string = nullptr;
    error_code syntax_error = SUCCESS;   // what simdjson said, for -32700's detail

    Failure fail(error_code error) {
        syntax_error = error;
        return Failure::syntax;
    }

    void begin(size_t frame_length) {
        size_t need = frame_length + SIMDJSON_PADDING;
        if (need > strings_capacity) {
            strings.reset(new uint8_t[need]);
            strings_capacity = need;
        }
        next_string = strings.get();
        syntax_error = SUCCESS;
    }

    static bool is_hex(unsigned char c) { return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f'); }
    static unsigned hex(unsigned char c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; }

    // A string token (`raw` just after its opening quote), unescaped. simdjson refuses lone surrogate escapes,
    // which JSON allows textually and rpcd decodes to U+FFFD: only then is the string decoded here, the same way.
    inline bool unescape(ondemand::raw_json_string raw, std::string_view &text) {
        // Most strings are short and have no escape: stage 1 has checked their UTF-8 and control characters,
        // so finding the closing quote before any backslash is reading them whole. Longer ones and escaped
        // ones go through simdjson's (SIMD) unescaping.
        // 32 bytes at once: the padding after every frame makes the load safe at its end.
        const char *chars = raw.raw();
        __m256i block = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(chars));
        uint32_t quotes = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(block, _mm256_set1_epi8('"')));
        uint32_t backslashes = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(block, _mm256_set1_epi8('\\')));
        if (quotes && ((quotes - 1) & backslashes) == 0) {
            text = std::string_view(chars, (size_t)__builtin_ctz(quotes));
            return true;
        }
        return unescape_slowly(raw, text);
    }

    __attribute__((noinline)) bool unescape_slowly(ondemand::raw_json_string raw, std::string_view &text) {
        uint8_t *start = next_string;
        if (!parser.unescape(raw, next_string).get(text)) return true;
        next_string = start;
        const unsigned char *p = reinterpret_cast<const unsigned char *>(raw.raw());
        uint8_t *d = start;
        for (;;) {
            unsigned char c = *p;
            if (c == '"') break;
            if (c != '\\') {
                *d++ = c;
                p++;
                continue;
            }
            unsigned char e = p[1];
            const char *simple = strchr("\"\\/bfnrt", e);
            if (e != 0 && simple) {
                static const char decoded[] = "\"\\/\b\f\n\r\t";
                *d++ = (uint8_t)decoded[simple - "\"\\/bfnrt"];
                p += 2;
                continue;
            }
            if (e != 'u' || !is_hex(p[2]) || !is_hex(p[3]) || !is_hex(p[4]) || !is_hex(p[5])) return false;
            uint32_t unit = hex(p[2]) << 12 | hex(p[3]) << 8 | hex(p[4]) << 4 | hex(p[5]);
            p += 6;
            uint32_t scalar = unit;
            if (unit >= 0xD800 && unit <= 0xDBFF && p[0] == '\\' && p[1] == 'u' && is_hex(p[2]) && is_hex(p[3]) &&
                is_hex(p[4]) && is_hex(p[5])) {
                uint32_t low = hex(p[2]) << 12 | hex(p[3]) << 8 | hex(p[4]) << 4 | hex(p[5]);
                if (low >= 0xDC00 && low <= 0xDFFF) {
                    scalar = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
                    p += 6;
                }
            }
            if (scalar >= 0xD800 && scalar <= 0xDFFF) scalar = 0xFFFD;
            if (scalar < 0x80) {
                *d++ = (uint8_t)scalar;
            } else if (scalar < 0x800) {
                *d++ = (uint8_t)(0xC0 | scalar >> 6);
                *d++ = (uint8_t)(0x80 | (scalar & 0x3F));
            } else if (scalar < 0x10000) {
                *d++ = (uint8_t)(0xE0 | scalar >> 12);
                *d++ = (uint8_t)(0x80 | ((scalar >> 6) & 0x3F));
                *d++ = (uint8_t)(0x80 | (scalar & 0x3F));
            } else {
                *d++ = (uint8_t)(0xF0 | scalar >> 18);
                *d++ = (uint8_t)(0x80 | ((scalar >> 12) & 0x3F));
                *d++ = (uint8_t)(0x80 | ((scalar >> 6) & 0x3F));
                *d++ = (uint8_t)(0x80 | (scalar & 0x3F));
            }
        }
        text = std::string_view(reinterpret_cast<const char *>(start), (size_t)(d - start));
        next_string = d;
        return true;
    }

    // A scalar token as simdjson cuts it (up to the next structural character, whitespace included) without
    // its trailing whitespace.
    static std::string_view trimmed(std::string_view token) {
        while (!token.empty()) {
            char c = token.back();
            if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
            token.remove_suffix(1);
        }
        return token;
    }

    // RFC 8259's number grammar. Numbers are checked, never converted: rpcd does not convert them either (and
    // 1e400 is valid JSON, which simdjson's own number parsing refuses).
    static bool is_number(std::string_view t) {
        size_t i = 0, n = t.size();
        auto digit = [&](size_t k) { return k < n && t[k] >= '0' && t[k] <= '9'; };
        if (i < n && t[i] == '-') i++;
        if (!digit(i)) return false;
        if (t[i] == '0') {
            i++;
        } else {
            while (digit(i)) i++;
        }
        if (i < n && t[i] == '.') {
            i++;
            if (!digit(i)) return false;
            while (digit(i)) i++;
        }
        if (i < n && (t[i] == 'e' || t[i] == 'E')) {
            i++;
            if (i < n && (t[i] == '+' || t[i] == '-')) i++;
            if (!digit(i)) return false;
            while (digit(i)) i++;
        }
        return i == n;
    }

    // A scalar of kind `type`, its token `token` (trimmed). Strings are unescaped by the caller.
    static bool valid_scalar(ondemand::json_type type, std::string_view token) {
        switch (type) {
        case ondemand::json_type::number: return is_number(token);
        case ondemand::json_type::boolean: return token == "true" || token == "false";
        case ondemand::json_type::null: return token == "null";
        default: return false;
        }
    }

    // What the walk of a params value learns for ParamsBinder.requireNone: its members (or elements), and of an
    // object's member names the first in sorted order.
    struct ParamsShape {
        size_t count = 0;
        std::string_view least_name;
    };

    // Walks `value`, enclosed by `depth` containers: every element, every member, every string.
    Failure walk(ondemand::value value, int depth, ParamsShape *shape = nullptr) {
        ondemand::json_type type;
        if (auto error = value.type().get(type)) return fail(error);
        switch (type) {
        case ondemand::json_type::array: {
            if (depth + 1 > max_nesting_depth) return Failure::too_deep;
            ondemand::array array;
            if (auto error = value.get_array().get(array)) return fail(error);
            for (auto element : array) {
                ondemand::value item;
                if (auto error = std::move(element).get(item)) return fail(error);
                if (Failure f = walk(item, depth + 1); f != Failure::none) return f;
                if (shape) shape->count++;
            }
            return Failure::none;
        }
        case ondemand::json_type::object: {
            if (depth + 1 > max_nesting_depth) return Failure::too_deep;
            ondemand::object object;
            if (auto error = value.get_object().get(object)) return fail(error);
            for (auto member : object) {
                ondemand::field field;
                if (auto error = std::move(member).get(field)) return fail(error);
                std::string_view name;
                if (!unescape(field.key(), name)) return fail(STRING_ERROR);
                if (Failure f = walk(field.value(), depth + 1); f != Failure::none) return f;
                if (shape) {
                    if (shape->count == 0 || name < shape->least_name) shape->least_name = name;
                    shape->count++;
                }
            }
            return Failure::none;
        }
        case ondemand::json_type::string: {
            ondemand::raw_json_string raw;
            if (auto error = value.get_raw_json_string().get(raw)) return fail(error);
            std::string_view text;
            return unescape(raw, text) ? Failure::none : fail(STRING_ERROR);
        }
        default: {
            std::string_view token;
            token = value.raw_json_token();
            // Left unconsumed: the enclosing iterator steps over a scalar without looking at it again.
            return valid_scalar(type, trimmed(token)) ? Failure::none : fail(NUMBER_ERROR);
        }
        }
    }
};

// ---------------------------------------------------------------------------------------------------------
// One request object: the envelope members found while walking it, then rpcd's checks in rpcd's order.

struct Envelope {
    enum Member { jsonrpc, method, params, id, count };
    bool present[count] = {};
    ondemand::json_type kind[count] = {};
    const char *duplicate = nullptr;
    std::string_view id_json, method_name;
    bool jsonrpc_is_2_0 = false;
    Walk::ParamsShape params_shape;
};

// Which envelope member `name` is, or -1.
int envelope_member(std::string_view name) {
    switch (name.size()) {
    case 2: return memcmp(name.data(), "id", 2) == 0 ? Envelope::id : -1;
    case 6:
        if (memcmp(name.data(), "method", 6) == 0) return Envelope::method;
        return memcmp(name.data(), "params", 6) == 0 ? Envelope::params : -1;
    case 7: return memcmp(name.data(), "jsonrpc", 7) == 0 ? Envelope::jsonrpc : -1;
    }
    return -1;
}

// Walks the request object `object` at `depth` enclosing containers into `envelope`.
Failure walk_request(Walk &walk, ondemand::object &object, int depth, Envelope &envelope) {
    if (depth + 1 > max_nesting_depth) return Failure::too_deep;
    for (auto member : object) {
        ondemand::field field;
        if (auto error = std::move(member).get(field)) return walk.fail(error);
        std::string_view name;
        if (!walk.unescape(field.key(), name)) return walk.fail(STRING_ERROR);
        int which = envelope_member(name);
        ondemand::value item = field.value();
        if (which < 0) {
            if (Failure f = walk.walk(item, depth + 1); f != Failure::none) return f;
            continue;
        }
        static const char *names[] = {"jsonrpc", "method", "params", "id"};
        if (envelope.present[which]) envelope.duplicate = names[which];
        envelope.present[which] = true;
        ondemand::json_type type;
        if (auto error = item.type().get(type)) return walk.fail(error);
        envelope.kind[which] = type;
        if (type == ondemand::json_type::string && which != Envelope::id) {
            ondemand::raw_json_string raw;
            std::string_view text;
            if (auto error = item.get_raw_json_string().get(raw)) return walk.fail(error);
            if (!walk.unescape(raw, text)) return walk.fail(STRING_ERROR);
            if (which == Envelope::method) envelope.method_name = text;
            else if (which == Envelope::jsonrpc) envelope.jsonrpc_is_2_0 = text == "2.0";
            // a string params is refused below; it has been read all the same
            continue;
        }
        if (which == Envelope::id && type != ondemand::json_type::array && type != ondemand::json_type::object) {
            std::string_view token;
            token = item.raw_json_token();
            envelope.id_json = Walk::trimmed(token);  // the id's bytes, in the frame, copied into the reply
        }
        if (which == Envelope::params) envelope.params_shape = {};
        Failure f = walk.walk(item, depth + 1, which == Envelope::params ? &envelope.params_shape : nullptr);
        if (f != Failure::none) return f;
    }
    return Failure::none;
}

// The reply to one walked request (nothing for a notification), as RPCEnvelopeParser's `entry` and the
// dispatcher decide it.
void answer(const Envelope &e, Output &out) {
    using T = ondemand::json_type;
    std::string_view id = null_id;
    bool has_id = false;
    if (e.present[Envelope::id]) {
        T k = e.kind[Envelope::id];
        if (k != T::string && k != T::number && k != T::null) {
            write_error(out, invalid_request, "detail", "'id' must be a string, a number or null", null_id);
            return;
        }
        id = e.id_json;
        has_id = true;
    }
    if (e.duplicate) {
        std::string detail = std::string("member '") + e.duplicate + "' appears more than once";
        write_error(out, invalid_request, "detail", detail, strcmp(e.duplicate, "id") == 0 ? null_id : id);
        return;
    }
    if (!e.present[Envelope::jsonrpc] || e.kind[Envelope::jsonrpc] != T::string || !e.jsonrpc_is_2_0)
        return write_error(out, invalid_request, "detail", "'jsonrpc' must be exactly \"2.0\"", id);
    if (!e.present[Envelope::method]) return write_error(out, invalid_request, "detail", "'method' is missing", id);
    if (e.kind[Envelope::method] != T::string)
        return write_error(out, invalid_request, "detail", "'method' must be a string", id);
    if (e.present[Envelope::params] && e.kind[Envelope::params] != T::object && e.kind[Envelope::params] != T::array)
        return write_error(out, invalid_request, "detail", "'params' must be an object or an array", id);
    // A valid request: a notification gets no reply, whatever happens to it.
    if (!has_id) return;
    if (methods.find(e.method_name) != Method::ping)
        return write_error(out, method_not_found, "method", e.method_name, id);
    if (e.present[Envelope::params] && e.params_shape.count > 0) {
        if (e.kind[Envelope::params] == T::array)
            return write_error(out, invalid_params, "detail", "this method takes no parameters", id);
        std::string detail = "unknown parameter '" + std::string(e.params_shape.least_name) + "'";
        return write_error(out, invalid_params, "detail", detail, id);
    }
    out.add(R"({"jsonrpc":"2.0","result":"pong","id":)");
    out.add(id);
    out.add('}');
}

// Whether the document has nothing after what was read of it (simdjson 3.0's way to ask).
bool at_end(ondemand::document &doc) { return doc.current_location().error() == OUT_OF_BOUNDS; }

// One frame's payload (`length` bytes at `frame`, with SIMDJSON_PADDING readable bytes after it) answered into
// `out` as one frame, or nothing when every call in it was a notification.
void handle_frame(Walk &walk, char *frame, size_t length, Output &out) {
    // The padding is whatever follows in the input buffer (the next frame, say). On Demand reads the byte just
    // past the document when it looks for one more element or member: a NUL there ends that look with an error,
    // whatever the stream holds (simdjson's padded strings put one there too). Put back when done.
    struct Terminator {
        char *at;
        char saved;
        explicit Terminator(char *at) : at(at), saved(*at) { *at = 0; }
        ~Terminator() { *at = saved; }
    } terminator(frame + length);
    size_t header_at = out.skip(4);
    size_t body_at = out.size();
    walk.begin(length);
    Failure failure = Failure::none;
    bool refused_batch = false;  // an empty batch or a message that is neither an object nor an array

    ondemand::document doc;
    error_code error = walk.parser.iterate(frame, length, length + SIMDJSON_PADDING).get(doc);
    ondemand::json_type type{};
    if (!error) error = doc.type().get(type);
    if (error) {
        failure = walk.fail(error);
    } else if (type == ondemand::json_type::object) {
        // Through get_value(), not the document's get_object(): that checks first that the last token closes
        // the object, where rpcd reads from the left and may meet the nesting limit first. The NUL after the
        // frame keeps the walk inside it.
        Envelope envelope;
        ondemand::value root;
        ondemand::object object;
        if ((error = doc.get_value().get(root)) || (error = root.get_object().get(object))) failure = walk.fail(error);
        else failure = walk_request(walk, object, 0, envelope);
        if (failure == Failure::none && !at_end(doc)) failure = walk.fail(TRAILING_CONTENT);
        if (failure == Failure::none) answer(envelope, out);
    } else if (type == ondemand::json_type::array) {
        ondemand::value root;
        ondemand::array batch;
        size_t entries = 0;
        out.add('[');
        size_t first_reply = out.size();
        if ((error = doc.get_value().get(root)) || (error = root.get_array().get(batch))) failure = walk.fail(error);
        if (failure == Failure::none) {
            for (auto element : batch) {
                ondemand::value item;
                if ((error = std::move(element).get(item))) {
                    failure = walk.fail(error);
                    break;
                }
                if (entries == max_batch_length) {
                    failure = Failure::batch_too_large;  // refused before the rest is read, as rpcd does
                    break;
                }
                entries++;
                ondemand::json_type item_type;
                if ((error = item.type().get(item_type))) {
                    failure = walk.fail(error);
                    break;
                }
                size_t before = out.size();
                if (before > first_reply) out.add(',');
                size_t reply_at = out.size();
                if (item_type == ondemand::json_type::object) {
                    Envelope envelope;
                    ondemand::object object;
                    if ((error = item.get_object().get(object))) failure = walk.fail(error);
                    else failure = walk_request(walk, object, 1, envelope);
                    if (failure == Failure::none) answer(envelope, out);
                } else {
                    failure = walk.walk(item, 1);
                    if (failure == Failure::none)
                        write_error(out, invalid_request, "detail", "a batch element must be a request object", null_id);
                }
                if (failure != Failure::none) break;
                if (out.size() == reply_at) out.truncate(before);  // a notification: no comma either
            }
        }
        if (failure == Failure::none && !at_end(doc)) failure = walk.fail(TRAILING_CONTENT);
        if (failure == Failure::none && entries == 0) {
            refused_batch = true;
            out.truncate(body_at);
            write_error(out, invalid_request, "detail", "a batch must not be empty", null_id);
        } else if (failure == Failure::none) {
            if (out.size() == first_reply) out.truncate(body_at);  // all notifications
            else out.add(']');
        }
    } else {
        // A scalar message: valid JSON is -32600, anything else -32700.
        std::string_view token;
        if ((error = doc.raw_json_token().get(token))) {
            failure = walk.fail(error);
        } else if (type == ondemand::json_type::string) {
            ondemand::raw_json_string raw;
            std::string_view text;
            if ((error = doc.get_raw_json_string().get(raw))) failure = walk.fail(error);
            else if (!walk.unescape(raw, text)) failure = walk.fail(STRING_ERROR);
            else if (!at_end(doc)) failure = walk.fail(TRAILING_CONTENT);
        } else if ((size_t)(token.data() - frame) + token.size() != length) {
            failure = walk.fail(TRAILING_CONTENT);  // another token follows the scalar
        } else if (!Walk::valid_scalar(type, Walk::trimmed(token))) {
            failure = walk.fail(NUMBER_ERROR);
        }
        if (failure == Failure::none) {
            refused_batch = true;
            write_error(out, invalid_request, "detail", "a message must be a request object or a batch array", null_id);
        }
    }
    (void)refused_batch;

    if (failure != Failure::none) {
        out.truncate(body_at);
        switch (failure) {
        case Failure::too_deep: write_limit_error(out, nesting_too_deep, max_nesting_depth, null_id); break;
        case Failure::batch_too_large: write_limit_error(out, batch_too_large, max_batch_length, null_id); break;
        default: {
            bool empty = walk.syntax_error == EMPTY;
            write_error(out, parse_error, "detail", empty ? "empty message" : error_message(walk.syntax_error), null_id);
        }
        }
    }
    size_t body = out.size() - body_at;
    if (body == 0) {
        out.truncate(header_at);
        return;
    }
    uint32_t be = htonl((uint32_t)body);
    memcpy(out.data() + header_at, &be, 4);
}

// ---------------------------------------------------------------------------------------------------------
// Connections: level-triggered epoll, one read burst in, its replies out in one write().

struct Connection {
    int fd = -1;
    char *in = nullptr;   // `capacity` + SIMDJSON_PADDING bytes: frames are parsed where they were read
    size_t length = 0, capacity = 0;
    Output out;
    size_t written = 0;   // of out
    bool closing = false; // a frame was refused: answered, output shut, input drained until EOF
};

void grow(Connection &c, size_t need) {
    if (need <= c.capacity) return;
    size_t capacity = c.capacity ? c.capacity : 65536;
    while (capacity < need) capacity *= 2;
    char *in = static_cast<char *>(realloc(c.in, capacity + SIMDJSON_PADDING));
    if (!in) {
        perror("realloc");
        exit(1);
    }
    c.in = in;
    c.capacity = capacity;
}

int epoll_fd;
std::vector<Connection *> connections;  // by fd
Walk *walker;

void close_connection(Connection *c) {
    epoll_ctl(epoll_fd, EPOLL_CTL_DEL, c->fd, nullptr);
    close(c->fd);
    connections[c->fd] = nullptr;
    free(c->in);
    delete c;
}

void watch(Connection *c) {
    bool pending = c->written < c->out.size();
    // While replies wait for the socket, the connection is not read: what a peer makes us hold stays bounded.
    epoll_event event{};
    event.events = pending ? EPOLLOUT : EPOLLIN;
    event.data.fd = c->fd;
    epoll_ctl(epoll_fd, EPOLL_CTL_MOD, c->fd, &event);
}

// Writes what is pending; false when the connection is gone.
bool flush(Connection *c) {
    while (c->written < c->out.size()) {
        ssize_t n = write(c->fd, c->out.data() + c->written, c->out.size() - c->written);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) return true;
        if (n <= 0) {
            close_connection(c);
            return false;
        }
        c->written += (size_t)n;
    }
    c->out.clear();
    c->written = 0;
    if (c->closing) shutdown(c->fd, SHUT_WR);
    return true;
}

void readable(Connection *c) {
    for (;;) {
        grow(*c, c->length + 16384);
        size_t room = c->capacity - c->length;
        ssize_t n = read(c->fd, c->in + c->length, room);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) break;
        if (n <= 0) {
            // End of input: a frame cut short has nobody to answer.
            close_connection(c);
            return;
        }
        if (c->closing) continue;  // after a refusal, input is read and dropped until the peer closes
        c->length += (size_t)n;
        if ((size_t)n < room) break;  // drained
    }
    if (c->closing) return;
    size_t at = 0;
    bool was_idle = c->out.empty();
    while (c->length - at >= 4) {
        uint32_t be;
        memcpy(&be, c->in + at, 4);
        size_t announced = ntohl(be);
        if (announced > max_frame_size) {
            // As rpcd: the frames before it are answered, then the refusal.
            size_t header_at = c->out.skip(4);
            write_limit_error(c->out, frame_too_large, max_frame_size, null_id, (long long)announced);
            uint32_t body = htonl((uint32_t)(c->out.size() - header_at - 4));
            memcpy(c->out.data() + header_at, &body, 4);
            c->closing = true;
            at = c->length;
            break;
        }
        if (c->length - at - 4 < announced) {
            grow(*c, announced + 4);  // room for the whole frame, so that it arrives in place
            break;
        }
        handle_frame(*walker, c->in + at + 4, announced, c->out);
        at += 4 + announced;
    }
    if (at > 0) {
        memmove(c->in, c->in + at, c->length - at);
        c->length -= at;
    }
    if (!flush(c)) return;
    if (was_idle && c->written < c->out.size()) watch(c);
}

void writable(Connection *c) {
    if (!flush(c)) return;
    if (c->out.empty()) watch(c);
}

volatile sig_atomic_t stopping = 0;

void stop(int) { stopping = 1; }

}  // namespace

int main(int argc, char **argv) {
    const char *listen_at = "127.0.0.1:0";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--listen") == 0 && i + 1 < argc) {
            listen_at = argv[++i];
        } else {
            fprintf(stderr, "usage: jsonrpc-reference [--listen HOST:PORT]\n");
            return 64;
        }
    }
    std::string host(listen_at);
    size_t colon = host.rfind(':');
    if (colon == std::string::npos) {
        fprintf(stderr, "jsonrpc-reference: --listen takes HOST:PORT\n");
        return 64;
    }
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons((uint16_t)atoi(host.c_str() + colon + 1));
    if (inet_pton(AF_INET, host.substr(0, colon).c_str(), &address.sin_addr) != 1) {
        fprintf(stderr, "jsonrpc-reference: %s is not an IPv4 address\n", host.substr(0, colon).c_str());
        return 64;
    }
    signal(SIGPIPE, SIG_IGN);
    struct sigaction action{};
    action.sa_handler = stop;
    sigaction(SIGTERM, &action, nullptr);
    sigaction(SIGINT, &action, nullptr);

    int listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(listener, reinterpret_cast<sockaddr *>(&address), sizeof address) < 0 || listen(listener, 4096) < 0) {
        perror("jsonrpc-reference: bind");
        return 1;
    }
    socklen_t size = sizeof address;
    getsockname(listener, reinterpret_cast<sockaddr *>(&address), &size);
    char text[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &address.sin_addr, text, sizeof text);
    // On Demand runs the kernel compiled into this program: "haswell" needs AVX2, BMI, LZCNT and PCLMUL at compile
    // time (-march=x86-64-v3 lacks PCLMUL: hence -mpclmul), or it is "fallback", the portable one. Stage 1 runs
    // in the library, whose kernel is chosen at run time.
    printf("jsonrpc-reference (simdjson %d.%d.%d, On Demand kernel %s, stage 1 %s) listening on %s:%d\n",
           SIMDJSON_VERSION_MAJOR, SIMDJSON_VERSION_MINOR, SIMDJSON_VERSION_REVISION,
           SIMDJSON_STRINGIFY(SIMDJSON_BUILTIN_IMPLEMENTATION), get_active_implementation()->name().c_str(), text,
           ntohs(address.sin_port));
    fflush(stdout);

    walker = new Walk();
    epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.fd = listener;
    epoll_ctl(epoll_fd, EPOLL_CTL_ADD, listener, &event);
    epoll_event events[256];
    while (!stopping) {
        int n = epoll_wait(epoll_fd, events, 256, -1);
        if (n < 0) {
            if (errno == EINTR) continue;
            perror("epoll_wait");
            return 1;
        }
        for (int i = 0; i < n; i++) {
            int fd = events[i].data.fd;
            if (fd == listener) {
                for (;;) {
                    int client = accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
                    if (client < 0) break;
                    setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    if ((size_t)client >= connections.size()) connections.resize((size_t)client + 1024, nullptr);
                    Connection *c = new Connection();
                    c->fd = client;
                    connections[client] = c;
                    epoll_event watch_in{};
                    watch_in.events = EPOLLIN;
                    watch_in.data.fd = client;
                    epoll_ctl(epoll_fd, EPOLL_CTL_ADD, client, &watch_in);
                }
                continue;
            }
            Connection *c = (size_t)fd < connections.size() ? connections[fd] : nullptr;
            if (!c) continue;
            if (events[i].events & EPOLLOUT) writable(c);
            else readable(c);
        }
    }
    return 0;
}
