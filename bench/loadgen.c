/*
 * loadgen: a small, fast load client for rpcd's framing (4-byte big-endian length, then one JSON-RPC
 * message), so that the client is not what a benchmark measures.
 *
 *     loadgen HOST PORT METHOD PARAMS_JSON CONNECTIONS DEPTH SECONDS [WARMUP_SECONDS]
 *
 * PARAMS_JSON is the params member's JSON text, or @FILE to read it from FILE (for large params).
 * Opens CONNECTIONS TCP connections, keeps DEPTH calls in flight on each (the slot number is the id),
 * and for SECONDS after a warm-up counts replies and records each call's latency. One thread, epoll,
 * non-blocking sockets, one write per burst of replies, no JSON parsing: a reply's id is found by
 * scanning for the last "id": member, and an error by a top-level "error" member. Prints one JSON
 * object: calls, errors, calls_per_second, bytes_per_second (reply payload), p50_us, p99_us, max_us.
 *
 * LOADGEN_TLS=1 in the environment speaks TLS (OpenSSL; the server's certificate is not checked: loopback
 * benchmarks only). LOADGEN_CONNECTION_PER_CALL=1 measures connection set-up instead: CONNECTIONS forked
 * workers (DEPTH must be 1) each connect (and shake hands), make one call, read its reply and close, over and
 * over; a call's latency then includes its connection. LOADGEN_TLS_RESUME=1 with both makes each worker offer
 * the session (TLS 1.3 ticket) of its previous connection, as a client that keeps its session does; the
 * output then counts the connections the server resumed ("resumed"), as SSL_session_reused tells.
 *
 * LOADGEN_WEBSOCKET=1 speaks WebSocket to an rpcd http:// listener instead (docs/PROTOCOL.md §9): each
 * connection is upgraded with GET /rpc, then every call is one masked text frame (the masking key is zero,
 * which leaves the payload as it is: the server unmasks all the same) and every reply one text frame.
 *
 * Bounded: it stops by itself after WARMUP + SECONDS (plus at most 5 s of draining), and only talks to
 * the address it is given (the benchmarks give it loopback).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_LATENCY_US 10000000 /* latencies are bucketed per microsecond up to 10 s */

typedef struct {
    int fd;
    SSL *ssl;          /* NULL without TLS */
    char *in;          /* received, not yet consumed */
    size_t in_len, in_cap;
    char *out;         /* to send */
    size_t out_len, out_off, out_cap;
    uint64_t *sent_at; /* per slot: when its call was sent (ns) */
} conn;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *what)
{
    perror(what);
    exit(1);
}

static void *grow(void *buffer, size_t *cap, size_t need)
{
    if (need <= *cap) return buffer;
    size_t cap2 = *cap ? *cap : 4096;
    while (cap2 < need) cap2 *= 2;
    void *p = realloc(buffer, cap2);
    if (!p) die("realloc");
    *cap = cap2;
    return p;
}

static SSL_CTX *tls; /* NULL without TLS */
static SSL_SESSION *resume_session; /* LOADGEN_TLS_RESUME: the session the next connection offers */
static int websocket;  /* LOADGEN_WEBSOCKET=1 */

/* Upgrades a fresh blocking connection to WebSocket: GET /rpc, then the 101 answer, read whole. */
static void upgrade(int fd, const struct sockaddr_in *address)
{
    char request[256];
    int n = snprintf(request, sizeof request,
                     "GET /rpc HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                     "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
                     ntohs(address->sin_port));
    if (write(fd, request, (size_t)n) != n) die("write upgrade");
    char answer[1024];
    size_t got = 0;
    while (got < 4 || memcmp(answer + got - 4, "\r\n\r\n", 4) != 0) {
        if (got == sizeof answer || read(fd, answer + got, 1) != 1) die("read upgrade answer");
        got++;
    }
    if (memcmp(answer, "HTTP/1.1 101", 12) != 0) {
        fprintf(stderr, "loadgen: the server refused the WebSocket upgrade: %.*s\n", (int)got, answer);
        exit(1);
    }
}

/* Where the next message in `buffer` starts (`*header` bytes in) and how long it is; 0 while it is incomplete.
 * rpcd's framing: a 4-byte big-endian length. WebSocket: RFC 6455 §5.2, unmasked from the server. */
static int next_message(const char *buffer, size_t available, size_t *header, size_t *len)
{
    if (!websocket) {
        if (available < 4) return 0;
        uint32_t be;
        memcpy(&be, buffer, 4);
        *header = 4;
        *len = ntohl(be);
    } else {
        if (available < 2) return 0;
        const unsigned char *b = (const unsigned char *)buffer;
        size_t length = b[1] & 0x7f;
        *header = 2;
        if (length == 126) {
            if (available < 4) return 0;
            length = ((size_t)b[2] << 8) | b[3];
            *header = 4;
        } else if (length == 127) {
            if (available < 10) return 0;
            length = 0;
            for (int i = 2; i < 10; i++) length = (length << 8) | b[i];
            *header = 10;
        }
        *len = length;
    }
    return available - *header >= *len;
}

/* A connected, blocking socket to `address` (with its TLS handshake done when `tls` is set). */
static int open_connection(const struct sockaddr_in *address, SSL **ssl)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) die("socket");
    if (connect(fd, (const struct sockaddr *)address, sizeof *address) < 0) die("connect");
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (websocket) upgrade(fd, address);
    *ssl = NULL;
    if (tls) {
        *ssl = SSL_new(tls);
        SSL_set_fd(*ssl, fd);
        if (resume_session) SSL_set_session(*ssl, resume_session);
        if (SSL_connect(*ssl) != 1) {
            ERR_print_errors_fp(stderr);
            die("TLS handshake");
        }
    }
    return fd;
}

/* read/write, through TLS when the connection has it; "try again" is EAGAIN either way. */
static ssize_t conn_io(conn *c, void *buffer, size_t count, int writing)
{
    if (!c->ssl) return writing ? write(c->fd, buffer, count) : read(c->fd, buffer, count);
    int n = writing ? SSL_write(c->ssl, buffer, (int)(count > (1u << 30) ? (1u << 30) : count))
                    : SSL_read(c->ssl, buffer, (int)(count > (1u << 30) ? (1u << 30) : count));
    if (n > 0) return n;
    switch (SSL_get_error(c->ssl, n)) {
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE: errno = EAGAIN; return -1;
    case SSL_ERROR_ZERO_RETURN: return 0;
    default: errno = EIO; return -1;
    }
}

static char **requests;     /* per slot: the framed request */
static size_t *request_len;

static void queue_request(conn *c, int slot)
{
    c->out = grow(c->out, &c->out_cap, c->out_len + request_len[slot]);
    memcpy(c->out + c->out_len, requests[slot], request_len[slot]);
    c->out_len += request_len[slot];
    c->sent_at[slot] = now_ns();
}

static int flush_out(conn *c)
{
    while (c->out_off < c->out_len) {
        ssize_t n = conn_io(c, c->out + c->out_off, c->out_len - c->out_off, 1);
        if (n < 0) {
            if (errno == EAGAIN) return 0;
            return -1;
        }
        c->out_off += (size_t)n;
    }
    c->out_len = c->out_off = 0;
    return 0;
}

/* The id of a reply: the integer after the last "id": in the frame (rpcd writes the id last). */
static long reply_id(const char *frame, size_t len)
{
    for (size_t i = len; i >= 5; i--) {
        if (memcmp(frame + i - 5, "\"id\":", 5) == 0) {
            char *end;
            long id = strtol(frame + i, &end, 10);
            return end == frame + i ? -1 : id;
        }
    }
    return -1;
}

static uint64_t latency_percentile(const uint32_t *histogram, uint64_t calls, uint64_t per_hundred)
{
    uint64_t seen = 0;
    for (uint64_t us = 0; us <= MAX_LATENCY_US; us++) {
        seen += histogram[us];
        if (histogram[us] && seen * 100 >= calls * per_hundred) return us;
    }
    return 0;
}

/*
 * LOADGEN_CONNECTION_PER_CALL: `workers` processes, each connecting, calling slot 0's request once and closing
 * (with an RST, so that no TIME_WAIT piles up on the client's ports), until the measurement window ends.
 * Counters and the latency histogram are shared memory, updated atomically.
 */
static int connection_per_call(const struct sockaddr_in *address, int workers, double seconds, double warmup, int resume)
{
    struct shared {
        uint64_t calls, errors, bytes, connections, resumed;
        uint32_t histogram[MAX_LATENCY_US + 1];
    } *shared = mmap(NULL, sizeof *shared, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared == MAP_FAILED) die("mmap");
    uint64_t start = now_ns();
    uint64_t measure_from = start + (uint64_t)(warmup * 1e9), measure_to = measure_from + (uint64_t)(seconds * 1e9);
    for (int w = 0; w < workers; w++) {
        pid_t pid = fork();
        if (pid < 0) die("fork");
        if (pid > 0) continue;
        conn c = {0};
        c.in_cap = 65536;
        c.in = malloc(c.in_cap);
        for (uint64_t began = now_ns(); began < measure_to; began = now_ns()) {
            c.fd = open_connection(address, &c.ssl);
            c.out = requests[0];
            c.out_len = request_len[0];
            c.out_off = 0;
            while (c.out_off < c.out_len) {
                ssize_t n = conn_io(&c, c.out + c.out_off, c.out_len - c.out_off, 1);
                if (n <= 0) die("write");
                c.out_off += (size_t)n;
            }
            c.in_len = 0;
            size_t need = 4;
            while (c.in_len < need) {
                ssize_t got = conn_io(&c, c.in + c.in_len, c.in_cap - c.in_len, 0);
                if (got <= 0) die("the server closed the connection before replying");
                c.in_len += (size_t)got;
                if (c.in_len >= 4) {
                    uint32_t be;
                    memcpy(&be, c.in, 4);
                    need = 4 + ntohl(be);
                    if (need > c.in_cap) c.in = grow(c.in, &c.in_cap, need);
                }
            }
            uint64_t arrived = now_ns();
            if (arrived >= measure_from && arrived < measure_to) {
                __atomic_fetch_add(&shared->connections, 1, __ATOMIC_RELAXED);
                if (c.ssl && SSL_session_reused(c.ssl)) __atomic_fetch_add(&shared->resumed, 1, __ATOMIC_RELAXED);
                __atomic_fetch_add(&shared->calls, 1, __ATOMIC_RELAXED);
                __atomic_fetch_add(&shared->bytes, need - 4, __ATOMIC_RELAXED);
                if (memmem(c.in + 4, need - 4 < 64 ? need - 4 : 64, "\"error\":", 8))
                    __atomic_fetch_add(&shared->errors, 1, __ATOMIC_RELAXED);
                uint64_t us = (arrived - began) / 1000;
                __atomic_fetch_add(&shared->histogram[us > MAX_LATENCY_US ? MAX_LATENCY_US : us], 1, __ATOMIC_RELAXED);
            }
            if (c.ssl && resume) {
                /* After the reply, so the server's NewSessionTicket (sent after a TLS 1.3 handshake) was read. */
                SSL_SESSION *session = SSL_get1_session(c.ssl);
                if (session && SSL_SESSION_is_resumable(session)) {
                    if (resume_session) SSL_SESSION_free(resume_session);
                    resume_session = session;
                } else if (session) {
                    SSL_SESSION_free(session);
                }
            }
            if (c.ssl) {
                SSL_shutdown(c.ssl); /* sends close_notify; the reset below does not wait for the server's */
                SSL_free(c.ssl);
            }
            struct linger reset = {.l_onoff = 1, .l_linger = 0};
            setsockopt(c.fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
            close(c.fd);
        }
        _exit(0);
    }
    for (int w = 0; w < workers; w++) {
        int status;
        if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "loadgen: a worker failed\n");
            return 1;
        }
    }
    uint64_t max = 0;
    for (uint64_t us = 0; us <= MAX_LATENCY_US; us++) if (shared->histogram[us]) max = us;
    printf("{\"calls\":%llu,\"errors\":%llu,\"calls_per_second\":%.0f,\"bytes_per_second\":%.0f,"
           "\"p50_us\":%llu,\"p99_us\":%llu,\"max_us\":%llu,\"unanswered\":0,\"connections\":%llu,\"resumed\":%llu}\n",
           (unsigned long long)shared->calls, (unsigned long long)shared->errors, shared->calls / seconds,
           shared->bytes / seconds, (unsigned long long)latency_percentile(shared->histogram, shared->calls, 50),
           (unsigned long long)latency_percentile(shared->histogram, shared->calls, 99), (unsigned long long)max,
           (unsigned long long)shared->connections, (unsigned long long)shared->resumed);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 8) {
        fprintf(stderr, "usage: loadgen HOST PORT METHOD PARAMS_JSON CONNECTIONS DEPTH SECONDS [WARMUP]\n");
        return 64;
    }
    const char *host = argv[1];
    int port = atoi(argv[2]);
    const char *method = argv[3], *params = argv[4];
    if (params[0] == '@') {
        FILE *file = fopen(params + 1, "rb");
        if (!file) die(params + 1);
        fseek(file, 0, SEEK_END);
        long size = ftell(file);
        rewind(file);
        char *text = malloc((size_t)size + 1);
        if (!text || fread(text, 1, (size_t)size, file) != (size_t)size) die("read params");
        text[size] = 0;
        fclose(file);
        params = text;
    }
    int connections = atoi(argv[5]), depth = atoi(argv[6]);
    double seconds = atof(argv[7]), warmup = argc > 8 ? atof(argv[8]) : 1.0;
    if (connections < 1 || connections > 100000 || depth < 1 || depth > 4096 || seconds <= 0 || seconds > 3600) {
        fprintf(stderr, "loadgen: connections 1..100000, depth 1..4096, seconds 0..3600\n");
        return 64;
    }

    const char *websocket_setting = getenv("LOADGEN_WEBSOCKET");
    websocket = websocket_setting && strcmp(websocket_setting, "1") == 0;
    requests = calloc((size_t)depth, sizeof *requests);
    request_len = calloc((size_t)depth, sizeof *request_len);
    for (int slot = 0; slot < depth; slot++) {
        size_t body_cap = strlen(method) + strlen(params) + 64;
        char *message = malloc(body_cap);
        int n = snprintf(message, body_cap, "{\"jsonrpc\":\"2.0\",\"method\":\"%s\",\"params\":%s,\"id\":%d}", method,
                         params, slot);
        char *framed = malloc((size_t)n + 14);
        size_t header;
        if (!websocket) {
            uint32_t be = htonl((uint32_t)n);
            memcpy(framed, &be, 4);
            header = 4;
        } else {
            unsigned char *b = (unsigned char *)framed;
            b[0] = 0x81; /* FIN, text */
            if (n < 126) {
                b[1] = (unsigned char)(0x80 | n);
                header = 2;
            } else if (n < 65536) {
                b[1] = 0x80 | 126;
                b[2] = (unsigned char)(n >> 8);
                b[3] = (unsigned char)n;
                header = 4;
            } else {
                b[1] = 0x80 | 127;
                for (int i = 0; i < 8; i++) b[2 + i] = (unsigned char)((uint64_t)n >> (56 - 8 * i));
                header = 10;
            }
            memset(framed + header, 0, 4); /* the masking key: zero */
            header += 4;
        }
        memcpy(framed + header, message, (size_t)n);
        free(message);
        requests[slot] = framed;
        request_len[slot] = (size_t)n + header;
    }

    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, host, &address.sin_addr) != 1) {
        fprintf(stderr, "loadgen: %s is not an IPv4 address\n", host);
        return 64;
    }
    const char *tls_setting = getenv("LOADGEN_TLS"), *per_call = getenv("LOADGEN_CONNECTION_PER_CALL");
    if (tls_setting && strcmp(tls_setting, "1") == 0) {
        tls = SSL_CTX_new(TLS_client_method());
        if (!tls) die("SSL_CTX_new");
        SSL_CTX_set_min_proto_version(tls, TLS1_2_VERSION);
        SSL_CTX_set_verify(tls, SSL_VERIFY_NONE, NULL);
        SSL_CTX_set_mode(tls, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    }
    if (per_call && strcmp(per_call, "1") == 0) {
        if (depth != 1 || websocket) {
            fprintf(stderr, "loadgen: LOADGEN_CONNECTION_PER_CALL needs depth 1 and no WebSocket\n");
            return 64;
        }
        const char *resume = getenv("LOADGEN_TLS_RESUME");
        return connection_per_call(&address, connections, seconds, warmup, tls && resume && strcmp(resume, "1") == 0);
    }
    int ep = epoll_create1(0);
    conn *conns = calloc((size_t)connections, sizeof *conns);
    for (int i = 0; i < connections; i++) {
        int fd = open_connection(&address, &conns[i].ssl);
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
        conns[i].fd = fd;
        conns[i].sent_at = calloc((size_t)depth, sizeof(uint64_t));
        struct epoll_event event = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &event) < 0) die("epoll_ctl");
        for (int slot = 0; slot < depth; slot++) queue_request(&conns[i], slot);
        if (flush_out(&conns[i]) < 0) die("write");
    }

    uint32_t *histogram = calloc(MAX_LATENCY_US + 1, sizeof(uint32_t));
    uint64_t start = now_ns();
    uint64_t measure_from = start + (uint64_t)(warmup * 1e9);
    uint64_t measure_to = measure_from + (uint64_t)(seconds * 1e9);
    uint64_t drain_until = measure_to + 5000000000u;
    uint64_t calls = 0, errors = 0, bytes = 0, outstanding = (uint64_t)connections * (uint64_t)depth;
    int stopping = 0;
    struct epoll_event events[256];

    while (outstanding > 0) {
        uint64_t t = now_ns();
        if (t >= drain_until) break;
        if (t >= measure_to) stopping = 1;
        int n = epoll_wait(ep, events, 256, 100);
        if (n < 0 && errno != EINTR) die("epoll_wait");
        for (int e = 0; e < n; e++) {
            conn *c = &conns[events[e].data.u32];
            for (;;) {
                c->in = grow(c->in, &c->in_cap, c->in_len + 65536);
                ssize_t got = conn_io(c, c->in + c->in_len, c->in_cap - c->in_len, 0);
                if (got < 0 && errno == EAGAIN) break;
                if (got <= 0) {
                    fprintf(stderr, "loadgen: the server closed a connection\n");
                    return 1;
                }
                c->in_len += (size_t)got;
            }
            size_t off = 0;
            uint64_t arrived = now_ns();
            size_t header, len;
            while (next_message(c->in + off, c->in_len - off, &header, &len)) {
                const char *frame = c->in + off + header;
                long slot = reply_id(frame, len);
                if (slot < 0 || slot >= depth) {
                    fprintf(stderr, "loadgen: unexpected reply: %.200s\n", frame);
                    return 1;
                }
                if (arrived >= measure_from && arrived < measure_to) {
                    calls++;
                    bytes += len;
                    if (len > 9 && memmem(frame, len < 64 ? len : 64, "\"error\":", 8)) errors++;
                    uint64_t us = (arrived - c->sent_at[slot]) / 1000;
                    histogram[us > MAX_LATENCY_US ? MAX_LATENCY_US : us]++;
                }
                if (stopping) {
                    outstanding--;
                } else {
                    queue_request(c, (int)slot);
                }
                off += header + len;
            }
            memmove(c->in, c->in + off, c->in_len - off);
            c->in_len -= off;
            if (flush_out(c) < 0) die("write");
        }
    }

    uint64_t p50 = latency_percentile(histogram, calls, 50), p99 = latency_percentile(histogram, calls, 99), max = 0;
    for (uint64_t us = 0; us <= MAX_LATENCY_US; us++) if (histogram[us]) max = us;
    printf("{\"calls\":%llu,\"errors\":%llu,\"calls_per_second\":%.0f,\"bytes_per_second\":%.0f,"
           "\"p50_us\":%llu,\"p99_us\":%llu,\"max_us\":%llu,\"unanswered\":%llu}\n",
           (unsigned long long)calls, (unsigned long long)errors, calls / seconds, bytes / seconds,
           (unsigned long long)p50, (unsigned long long)p99, (unsigned long long)max, (unsigned long long)outstanding);
    return 0;
}
