/*
 * eventload.c -- events delivered per second to N subscribers of one event stream.
 *
 *     eventload HOST PORT SUBSCRIBERS DEPTH SECONDS WARMUP
 *
 * Opens SUBSCRIBERS connections that each subscribe to kv.changed, and one producer connection that keeps
 * DEPTH kv.set calls in flight (each reply sends the next), so rpcd publishes as fast as it can store. One
 * thread, epoll, non-blocking sockets: the client is not what is measured. After WARMUP seconds it counts,
 * for SECONDS, the rpc.event frames every subscriber reads, the rpc.eventsLost counts, and the producer's
 * replies, and prints one JSON object:
 *
 *     {"subscribers":N,"published_per_second":P,"delivered_per_second":D,"per_subscriber_per_second":D/N,
 *      "lost":L}
 *
 * Frames are classified by their first bytes (rpcd writes "method" right after "jsonrpc"), not parsed.
 * Loopback only; it stops by itself.
 */
#define _GNU_SOURCE 1
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef struct connection {
    int fd;
    int producer;
    unsigned char *in;
    size_t in_length, in_capacity;
    long long events, lost;
} connection;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void die(const char *what)
{
    fprintf(stderr, "eventload: %s: %s\n", what, strerror(errno));
    exit(1);
}

/* Writes all of BYTES (blocking briefly if the socket is full: requests are small and rare). */
static void send_all(int fd, const char *bytes, size_t length)
{
    while (length > 0) {
        ssize_t sent = send(fd, bytes, length, MSG_NOSIGNAL);
        if (sent < 0) {
            if (errno == EAGAIN || errno == EINTR) {
                continue;
            }
            die("send");
        }
        bytes += sent;
        length -= (size_t)sent;
    }
}

static void send_frame(int fd, const char *payload)
{
    char frame[512];
    uint32_t length = (uint32_t)strlen(payload);
    uint32_t header = htonl(length);
    memcpy(frame, &header, 4);
    memcpy(frame + 4, payload, length);
    send_all(fd, frame, length + 4);
}

static long long next_id = 1;

static void send_set(int fd)
{
    char payload[128];
    snprintf(payload, sizeof payload, "{\"jsonrpc\":\"2.0\",\"method\":\"kv.set\",\"params\":[\"k\",%lld],\"id\":%lld}",
             next_id, next_id);
    next_id++;
    send_frame(fd, payload);
}

static int open_connection(const char *host, int port)
{
    struct sockaddr_in address;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    if (fd < 0) {
        die("socket");
    }
    memset(&address, 0, sizeof address);
    address.sin_family = AF_INET;
    address.sin_port = htons((uint16_t)port);
    inet_pton(AF_INET, host, &address.sin_addr);
    if (connect(fd, (struct sockaddr *)&address, sizeof address) != 0) {
        die("connect");
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

static const char event_prefix[] = "{\"jsonrpc\":\"2.0\",\"method\":\"rpc.event\"";
static const char lost_prefix[] = "{\"jsonrpc\":\"2.0\",\"method\":\"rpc.eventsLost\"";

/* Handles every whole frame in C's input; returns the number of producer replies seen. */
static long long consume(connection *c, int counting)
{
    long long replies = 0;
    size_t offset = 0;
    while (c->in_length - offset >= 4) {
        uint32_t length;
        const unsigned char *payload;
        memcpy(&length, c->in + offset, 4);
        length = ntohl(length);
        if (c->in_length - offset - 4 < length) {
            break;
        }
        payload = c->in + offset + 4;
        if (c->producer) {
            replies++;
        } else if (length >= sizeof event_prefix - 1 && memcmp(payload, event_prefix, sizeof event_prefix - 1) == 0) {
            if (counting) {
                c->events++;
            }
        } else if (length >= sizeof lost_prefix - 1 && memcmp(payload, lost_prefix, sizeof lost_prefix - 1) == 0) {
            const char *count = memmem(payload, length, "\"count\":", 8);
            if (count != NULL && counting) {
                c->lost += atoll(count + 8);
            }
        }
        offset += 4 + length;
    }
    memmove(c->in, c->in + offset, c->in_length - offset);
    c->in_length -= offset;
    return replies;
}

int main(int argc, char **argv)
{
    const char *host;
    int port, subscribers, depth, epoll_fd, i;
    double seconds, warmup, start, counting_from = 0, end;
    connection *connections;
    long long published = 0;
    long long total_events = 0, total_lost = 0;
    struct epoll_event ready[256];

    if (argc != 7) {
        fprintf(stderr, "usage: eventload HOST PORT SUBSCRIBERS DEPTH SECONDS WARMUP\n");
        return 64;
    }
    host = argv[1];
    port = atoi(argv[2]);
    subscribers = atoi(argv[3]);
    depth = atoi(argv[4]);
    seconds = atof(argv[5]);
    warmup = atof(argv[6]);

    epoll_fd = epoll_create1(0);
    connections = calloc((size_t)subscribers + 1, sizeof *connections);
    for (i = 0; i <= subscribers; i++) {
        connection *c = &connections[i];
        struct epoll_event interest;
        c->fd = open_connection(host, port);
        c->producer = i == subscribers;
        c->in_capacity = 1 << 20;
        c->in = malloc(c->in_capacity);
        if (!c->producer) {
            send_frame(c->fd, "{\"jsonrpc\":\"2.0\",\"method\":\"rpc.subscribe\",\"params\":[\"kv.changed\"],\"id\":1}");
        }
        interest.events = EPOLLIN;
        interest.data.ptr = c;
        if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, c->fd, &interest) != 0) {
            die("epoll_ctl");
        }
    }
    /* The subscriptions are made (their replies read below) before the producer starts. */
    for (i = 0; i < subscribers; i++) {
        connection *c = &connections[i];
        while (c->in_length < 4 || c->in_length < 4 + ntohl(*(uint32_t *)c->in)) {
            ssize_t n = recv(c->fd, c->in + c->in_length, c->in_capacity - c->in_length, 0);
            if (n <= 0) {
                die("subscribe");
            }
            c->in_length += (size_t)n;
        }
        consume(c, 0);
    }
    for (i = 0; i < depth; i++) {
        send_set(connections[subscribers].fd);
    }

    start = now();
    end = start + warmup + seconds;
    for (;;) {
        double t = now();
        int counting = t >= start + warmup;
        int n;
        if (t >= end) {
            break;
        }
        if (counting && counting_from == 0) {
            counting_from = t;
        }
        n = epoll_wait(epoll_fd, ready, 256, 100);
        for (i = 0; i < n; i++) {
            connection *c = ready[i].data.ptr;
            ssize_t received;
            if (c->in_capacity - c->in_length < 65536) {
                c->in_capacity *= 2;
                c->in = realloc(c->in, c->in_capacity);
            }
            received = recv(c->fd, c->in + c->in_length, c->in_capacity - c->in_length, 0);
            if (received <= 0) {
                if (received < 0 && (errno == EAGAIN || errno == EINTR)) {
                    continue;
                }
                fprintf(stderr, "eventload: the server closed a connection\n");
                return 1;
            }
            c->in_length += (size_t)received;
            {
                long long replies = consume(c, counting);
                long long k;
                if (counting) {
                    published += replies;
                }
                for (k = 0; k < replies; k++) {
                    send_set(c->fd);
                }
            }
        }
    }
    for (i = 0; i < subscribers; i++) {
        total_events += connections[i].events;
        total_lost += connections[i].lost;
    }
    {
        double counted = now() - counting_from;
        printf("{\"subscribers\":%d,\"published_per_second\":%.0f,\"delivered_per_second\":%.0f,"
               "\"per_subscriber_per_second\":%.0f,\"lost\":%lld}\n",
               subscribers, published / counted, total_events / counted, total_events / counted / subscribers,
               total_lost);
    }
    return 0;
}
