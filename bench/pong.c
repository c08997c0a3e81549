#define _GNU_SOURCE
/* A framed JSON-RPC "server" that answers every request {"result":"pong"} with the request's id: what a client
 * costs when the server costs next to nothing (bench/python_client.py's ceiling, bench/README.md). Not a JSON
 * parser: it takes the text after the first "id": up to the next ',' or '}', as the clients it serves write
 * it. One thread per connection, blocking I/O, the replies of one read written together.
 *
 *     cc -O2 -pthread -o pong bench/pong.c && ./pong /tmp/pong.sock */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <stdint.h>
#include <arpa/inet.h>

static void *serve(void *arg) {
    int fd = (int)(intptr_t)arg;
    size_t cap = 1 << 22, len = 0;
    char *in = malloc(cap), *out = malloc(cap);
    for (;;) {
        ssize_t n = read(fd, in + len, cap - len);
        if (n <= 0) break;
        len += n;
        size_t pos = 0, olen = 0;
        while (len - pos >= 4) {
            uint32_t flen; memcpy(&flen, in + pos, 4); flen = ntohl(flen);
            if (len - pos - 4 < flen) break;
            char *p = in + pos + 4, *end = p + flen;
            char *id = memmem(p, flen, "\"id\":", 5);
            pos += 4 + flen;
            if (!id) continue;
            id += 5;
            char *e = id; while (e < end && *e != ',' && *e != '}') e++;
            int body = snprintf(out + olen + 4, 256, "{\"jsonrpc\":\"2.0\",\"result\":\"pong\",\"id\":%.*s}", (int)(e - id), id);
            uint32_t b = htonl(body); memcpy(out + olen, &b, 4); olen += 4 + body;
        }
        memmove(in, in + pos, len - pos); len -= pos;
        for (size_t w = 0; w < olen;) { ssize_t k = write(fd, out + w, olen - w); if (k <= 0) goto done; w += k; }
    }
done:
    close(fd); free(in); free(out); return NULL;
}

int main(int argc, char **argv) {
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    strncpy(a.sun_path, argv[1], sizeof a.sun_path - 1);
    unlink(argv[1]);
    if (bind(s, (void *)&a, sizeof a) || listen(s, 16)) { perror("bind"); return 1; }
    for (;;) { int c = accept(s, NULL, NULL); pthread_t t; pthread_create(&t, NULL, serve, (void *)(intptr_t)c); pthread_detach(t); }
}
