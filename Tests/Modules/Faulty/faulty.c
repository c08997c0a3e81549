/*
 * faulty.c -- a module whose methods crash, abort, exit, hang and allocate without end on request
 * (faulty_module.h): what fault isolation must contain.
 */
#define _GNU_SOURCE 1

#include "faulty_module.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

enum {
    METHOD_OK, METHOD_CRASH, METHOD_ABORT, METHOD_EXIT, METHOD_HANG, METHOD_HANG_BLOCKING, METHOD_ALLOCATE, METHOD_PID,
    METHOD_READ, METHOD_WRITE, METHOD_UNSHARE, METHOD_SOCKETS, METHOD_FORK_ABORT, METHOD_FORK_ORPHAN, METHOD_CALL_BACK, METHOD_FORKS, METHOD_REPLY,
    METHOD_EMIT, METHOD_STATE_DIRECTORY, METHOD_HANGING
};

static const rpcd_method methods[] = {
    {sizeof(rpcd_method), "ok", "Answers \"ok\" at once", NULL, 0, NULL, RPCD_METHOD_READ_ONLY},
    {sizeof(rpcd_method), "crash", "Dereferences NULL", NULL, 0, NULL, RPCD_METHOD_READ_ONLY},
    {sizeof(rpcd_method), "abort", "Calls abort()", NULL, 0, NULL, RPCD_METHOD_READ_ONLY},
    {sizeof(rpcd_method), "exit", "Calls exit(3)", NULL, 0, NULL, RPCD_METHOD_READ_ONLY},
    {sizeof(rpcd_method), "hang", "Blocks its event loop forever", NULL, 0, NULL, RPCD_METHOD_READ_ONLY},
    {sizeof(rpcd_method), "hang_blocking", "Blocks a worker forever", NULL, 0, NULL,
     RPCD_METHOD_READ_ONLY | RPCD_METHOD_MAY_BLOCK},
    {sizeof(rpcd_method), "allocate", "Allocates until it cannot", NULL, 0, NULL, RPCD_METHOD_READ_ONLY},
    {sizeof(rpcd_method), "pid", "The process the module runs in", NULL, 0, NULL, RPCD_METHOD_READ_ONLY},
    {sizeof(rpcd_method), "read", "Whether it can read the file at params[0]", NULL, 0, NULL, RPCD_METHOD_READ_ONLY},
    {sizeof(rpcd_method), "write", "Whether it can create the file at params[0]", NULL, 0, NULL, RPCD_METHOD_READ_ONLY},
    {sizeof(rpcd_method), "unshare", "The errno of making a user namespace (0: made)", NULL, 0, NULL, RPCD_METHOD_READ_ONLY},
    {sizeof(rpcd_method), "sockets", "The descriptors of the host that are sockets", NULL, 0, NULL, RPCD_METHOD_READ_ONLY},
    {sizeof(rpcd_method), "fork_abort", "Forks a child that keeps the link open, then calls abort()", NULL, 0, NULL,
     RPCD_METHOD_READ_ONLY},
    {sizeof(rpcd_method), "fork_orphan", "Forks a child that waits for ever; answers its pid", NULL, 0, NULL,
     RPCD_METHOD_READ_ONLY},
    {sizeof(rpcd_method), "call_back", "Calls method params[1] of the rpcd at Unix socket params[0]; answers its reply",
     NULL, 0, NULL, RPCD_METHOD_READ_ONLY | RPCD_METHOD_MAY_BLOCK},
    {sizeof(rpcd_method), "forks", "Forks children that wait for ever, up to 500 or until fork fails; answers how many",
     NULL, 0, NULL, RPCD_METHOD_READ_ONLY},
    {sizeof(rpcd_method), "reply", "Answers a string of params[0] MiB", NULL, 0, NULL, RPCD_METHOD_READ_ONLY},
    {sizeof(rpcd_method), "emit", "Emits params[0] tick events (at most 1,000,000), then answers how many", NULL, 0, NULL,
     RPCD_METHOD_READ_ONLY},
    {sizeof(rpcd_method), "state_directory", "host->state_directory: the handler's StateDirectory= path, or null", NULL, 0,
     NULL, RPCD_METHOD_READ_ONLY},
    {sizeof(rpcd_method), "hanging", "How many calls of hang and hang_blocking the module has entered", NULL, 0, NULL,
     RPCD_METHOD_READ_ONLY},
};

/* Calls of hang and hang_blocking entered: a test knows a call is in the module, not waiting for a worker. */
static long hanging;

static const rpcd_event events[] = {
    {sizeof(rpcd_event), "tick", "A count, emitted by emit", "{\"type\":\"integer\"}"},
};

/* The first string of PARAMS (["/a/path"]; no escapes) into PATH; 0 when there is none. */
static int first_string(const char *params, size_t len, char *path, size_t size)
{
    const char *start = memchr(params, '"', len);
    if (start == NULL) return 0;
    start++;
    const char *end = memchr(start, '"', len - (size_t)(start - params));
    if (end == NULL || (size_t)(end - start) >= size) return 0;
    memcpy(path, start, (size_t)(end - start));
    path[end - start] = 0;
    return 1;
}

static const rpcd_host *host_table;

/* Connects to the Unix socket PATH, sends one framed call of METHOD, and reads the reply's frame into REPLY
 * (NUL-terminated); 0 on success. */
static int call_back(const char *path, const char *method, char *reply, size_t size)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    snprintf(address.sun_path, sizeof address.sun_path, "%s", path);
    if (fd < 0 || connect(fd, (struct sockaddr *)&address, sizeof address) != 0) {
        if (fd >= 0) close(fd);
        return -1;
    }
    char frame[512];
    int length = snprintf(frame + 4, sizeof frame - 4, "{\"jsonrpc\":\"2.0\",\"method\":\"%s\",\"params\":[\"debug\"],\"id\":1}", method);
    frame[0] = 0, frame[1] = 0, frame[2] = (char)(length >> 8), frame[3] = (char)length;
    unsigned char head[4];
    int ok = write(fd, frame, (size_t)length + 4) == length + 4 && recv(fd, head, 4, MSG_WAITALL) == 4;
    size_t reply_length = ok ? (size_t)head[2] << 8 | head[3] : 0;
    ok = ok && head[0] == 0 && head[1] == 0 && reply_length < size && recv(fd, reply, reply_length, MSG_WAITALL) == (ssize_t)reply_length;
    close(fd);
    if (!ok) return -1;
    reply[reply_length] = 0;
    return 0;
}

/* RPCD_FAULTY_LOAD=crash: the library crashes while it is being loaded (a constructor runs at dlopen, before
 * anyone has seen its descriptor), which `rpcd --check-config` must report rather than die of. */
__attribute__((constructor)) static void faulty_loaded(void)
{
    const char *mode = getenv("RPCD_FAULTY_LOAD");
    if (mode != NULL && strcmp(mode, "crash") == 0) {
        volatile int *nowhere = NULL;
        *nowhere = 1;
    }
}

static rpcd_handler *handler_of_module;

static int faulty_init(const rpcd_host *host, rpcd_handler *handler, void **instance, char *error, size_t error_size)
{
    (void)error;
    (void)error_size;
    host_table = host;
    handler_of_module = handler;
    *instance = NULL;
    return 0;
}

static void reply_text(rpcd_call *call, const char *json)
{
    host_table->reply_result(call, json, strlen(json));
}

static void faulty_call(void *instance, size_t method, const char *params, size_t len, rpcd_call *call)
{
    (void)instance;
    char text[64];
    switch (method) {
    case METHOD_OK:
        reply_text(call, "\"ok\"");
        break;
    case METHOD_CRASH: {
        volatile int *nowhere = NULL;
        *nowhere = 1;
        reply_text(call, "\"unreachable\"");
        break;
    }
    case METHOD_ABORT:
        abort();
    case METHOD_EXIT:
        exit(3);
    case METHOD_HANG:
    case METHOD_HANG_BLOCKING:
        __atomic_fetch_add(&hanging, 1, __ATOMIC_SEQ_CST);
        for (;;) pause();
    case METHOD_HANGING:
        snprintf(text, sizeof text, "%ld", __atomic_load_n(&hanging, __ATOMIC_SEQ_CST));
        reply_text(call, text);
        break;
    case METHOD_ALLOCATE: {
        size_t mebibytes = 0;
        for (;;) {
            char *block = malloc(1 << 20);
            if (block == NULL) break;
            memset(block, 1, 1 << 20);
            mebibytes++;
        }
        snprintf(text, sizeof text, "%zu", mebibytes);
        reply_text(call, text);
        break;
    }
    case METHOD_READ:
    case METHOD_WRITE: {
        char path[512];
        if (!first_string(params, len, path, sizeof path)) {
            host_table->reply_error(call, -32602, "Invalid params", NULL, 0);
            break;
        }
        int fd = method == METHOD_READ ? open(path, O_RDONLY) : open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        char byte;
        int ok = fd >= 0 && (method == METHOD_WRITE || read(fd, &byte, 1) >= 0);
        if (fd >= 0) close(fd);
        reply_text(call, ok ? "true" : "false");
        break;
    }
    case METHOD_UNSHARE:
        /* The errno: a multi-threaded process gets EINVAL from the kernel, EPERM only from a filter. */
        snprintf(text, sizeof text, "%d", unshare(CLONE_NEWUSER) == 0 ? 0 : errno);
        reply_text(call, text);
        break;
    case METHOD_SOCKETS: {
        /* Every descriptor rpcd handed the host (or forgot to close) that is a socket: a JSON array. */
        char list[1024] = "[";
        DIR *directory = opendir("/proc/self/fd");
        struct dirent *entry;
        while (directory != NULL && (entry = readdir(directory)) != NULL) {
            char link[64], target[64];
            snprintf(link, sizeof link, "/proc/self/fd/%s", entry->d_name);
            ssize_t length = readlink(link, target, sizeof target - 1);
            if (length <= 0) continue;
            target[length] = 0;
            if (strncmp(target, "socket:", 7) != 0) continue;
            size_t used = strlen(list);
            snprintf(list + used, sizeof list - used, "%s%s", used > 1 ? "," : "", entry->d_name);
        }
        if (directory != NULL) closedir(directory);
        strncat(list, "]", sizeof list - strlen(list) - 1);
        reply_text(call, list);
        break;
    }
    case METHOD_FORK_ABORT:
        /* The child keeps every descriptor, the link among them, open for ever. */
        if (fork() == 0) {
            for (;;) pause();
        }
        abort();
    case METHOD_FORK_ORPHAN: {
        pid_t child = fork();
        if (child == 0) {
            for (;;) pause();
        }
        snprintf(text, sizeof text, "%ld", (long)child);
        reply_text(call, text);
        break;
    }
    case METHOD_CALL_BACK: {
        char path[256], method_name[128], reply[4096];
        const char *second = NULL;
        if (first_string(params, len, path, sizeof path)) {
            const char *after = memchr(params, '"', len);
            after = after ? memchr(after + 1, '"', len - (size_t)(after + 1 - params)) : NULL;
            second = after ? after + 1 : NULL;
        }
        if (second == NULL || !first_string(second, len - (size_t)(second - params), method_name, sizeof method_name)) {
            host_table->reply_error(call, -32602, "Invalid params", NULL, 0);
            break;
        }
        if (call_back(path, method_name, reply, sizeof reply) != 0) {
            reply_text(call, "null");
            break;
        }
        reply_text(call, reply);
        break;
    }
    case METHOD_FORKS: {
        int forked = 0;
        for (; forked < 500; forked++) {
            pid_t child = fork();
            if (child < 0) break;
            if (child == 0) {
                for (;;) pause();
            }
        }
        snprintf(text, sizeof text, "%d", forked);
        reply_text(call, text);
        break;
    }
    case METHOD_REPLY: {
        const char *number = memchr(params, '[', len);
        long mebibytes = number != NULL ? strtol(number + 1, NULL, 10) : 0;
        if (mebibytes <= 0 || mebibytes > 1024) {
            host_table->reply_error(call, -32602, "Invalid params", NULL, 0);
            break;
        }
        size_t size = (size_t)mebibytes << 20;
        char *json = malloc(size + 2);
        if (json == NULL) {
            host_table->reply_error(call, -32603, "Internal error", NULL, 0);
            break;
        }
        memset(json + 1, 'x', size);
        json[0] = '"';
        json[size + 1] = '"';
        host_table->reply_result(call, json, size + 2);
        free(json);
        break;
    }
    case METHOD_EMIT: {
        const char *number = memchr(params, '[', len);
        long count = number != NULL ? strtol(number + 1, NULL, 10) : 0;
        if (count <= 0 || count > 1000000) {
            host_table->reply_error(call, -32602, "Invalid params", NULL, 0);
            break;
        }
        for (long index = 1; index <= count; index++) {
            char payload[32];
            int size = snprintf(payload, sizeof payload, "%ld", index);
            host_table->emit(handler_of_module, "tick", payload, (size_t)size);
        }
        snprintf(text, sizeof text, "%ld", count);
        reply_text(call, text);
        break;
    }
    case METHOD_STATE_DIRECTORY: {
        /* No escapes: the tests' paths have none. */
        const char *path = RPCD_HOST_HAS(host_table, state_directory) ? host_table->state_directory(handler_of_module) : NULL;
        char json[600];
        snprintf(json, sizeof json, path != NULL ? "\"%s\"" : "null", path);
        reply_text(call, json);
        break;
    }
    case METHOD_PID:
        snprintf(text, sizeof text, "%ld", (long)getpid());
        reply_text(call, text);
        break;
    default:
        host_table->reply_error(call, -32601, "Method not found", NULL, 0);
    }
}

static const rpcd_module module = {
    .abi_version = RPCD_MODULE_ABI_VERSION,
    .struct_size = sizeof(rpcd_module),
    .name = "faulty",
    .version = "1.0.0",
    .description = "Misbehaves on request, for the fault isolation tests.",
    .methods = methods,
    .n_methods = sizeof methods / sizeof methods[0],
    .init = faulty_init,
    .call = faulty_call,
    .events = events,
    .n_events = sizeof events / sizeof events[0],
};

const rpcd_module *rpcd_module_entry_v1(void)
{
    return &module;
}
