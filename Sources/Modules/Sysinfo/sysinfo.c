/*
 * sysinfo.c -- an rpcd module in plain C99: host name, uptime and load averages.
 *
 * It shows everything a C module needs: a static descriptor, per-handler state allocated in init() and
 * freed in deinit(), answering each call exactly once through the host table, rejecting parameters with
 * -32602, and logging through the host. It also emits an event from a thread of its own: sysinfo.load,
 * the load averages every LoadInterval= seconds ([Config] of its handler file; 0 turns it off), sent only
 * when the host offers emit (RPCD_HOST_HAS), so the module still loads in an rpcd older than events.
 */
#define _DEFAULT_SOURCE 1 /* gethostname, getloadavg */
#define _DARWIN_C_SOURCE 1

#include "sysinfo_module.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__linux__)
#include <sys/sysinfo.h>
#elif defined(__APPLE__)
#include <sys/sysctl.h>
#include <sys/time.h>
#endif

/* One handler's state: what it needs to answer, log and emit. */
typedef struct sysinfo_instance {
    const rpcd_host *host;
    rpcd_handler *handler;
    /* The sysinfo.load thread, when running: it waits on WAKE for PERIOD or until STOPPING is set. */
    int emitting;
    pthread_t emitter;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    int stopping;
    double period;
} sysinfo_instance;

enum { METHOD_HOSTNAME, METHOD_UPTIME, METHOD_LOADAVG };

/* Answers CALL with -32602 unless PARAMS is absent, [] or {}. Returns whether it answered. */
static int reject_params(const sysinfo_instance *self, const char *params, size_t len, rpcd_call *call)
{
    static const char detail[] = "{\"detail\":\"this method takes no parameters\"}";
    char open = 0;
    size_t i;
    for (i = 0; i < len; i++) {
        char c = params[i];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            continue;
        }
        if (open == 0 && (c == '[' || c == '{')) {
            open = c;
        } else if ((open == '[' && c == ']') || (open == '{' && c == '}')) {
            open = 'x';
        } else {
            self->host->reply_error(call, -32602, "Invalid params", detail, sizeof detail - 1);
            return 1;
        }
    }
    return 0;
}

/* Writes S as a JSON string literal into OUT (at most SIZE bytes); returns the length, or 0 if too long. */
static size_t json_string(const char *s, char *out, size_t size)
{
    size_t n = 0;
    const unsigned char *p;
    if (size < 3) {
        return 0;
    }
    out[n++] = '"';
    for (p = (const unsigned char *)s; *p != '\0'; p++) {
        char escaped[8];
        int k;
        if (*p == '"' || *p == '\\') {
            k = snprintf(escaped, sizeof escaped, "\\%c", *p);
        } else if (*p < 0x20) {
            k = snprintf(escaped, sizeof escaped, "\\u%04x", (unsigned)*p);
        } else {
            escaped[0] = (char)*p;
            k = 1;
        }
        if (n + (size_t)k + 1 >= size) {
            return 0;
        }
        memcpy(out + n, escaped, (size_t)k);
        n += (size_t)k;
    }
    out[n++] = '"';
    return n;
}

static void reply_internal_error(const sysinfo_instance *self, rpcd_call *call, const char *what, int error)
{
    rpcd_log_field fields[2];
    fields[0].name = "RPCD_ERROR";
    fields[0].value = strerror(error);
    fields[1].name = "OPERATION";
    fields[1].value = what;
    self->host->log(self->handler, RPCD_LOG_ERR, "System information unavailable", fields, 2);
    self->host->reply_error(call, -32603, "Internal error", NULL, 0);
}

static void call_hostname(const sysinfo_instance *self, rpcd_call *call)
{
    char name[256];
    char json[2 * sizeof name * 3];
    size_t len;
    if (gethostname(name, sizeof name) != 0) {
        reply_internal_error(self, call, "gethostname", errno);
        return;
    }
    name[sizeof name - 1] = '\0';
    len = json_string(name, json, sizeof json);
    self->host->reply_result(call, json, len);
}

/* Seconds since boot; returns 0 on success. */
static int read_uptime(double *seconds)
{
#if defined(__linux__)
    FILE *file = fopen("/proc/uptime", "r");
    if (file != NULL) {
        int ok = fscanf(file, "%lf", seconds) == 1;
        fclose(file);
        if (ok) {
            return 0;
        }
    }
    {
        struct sysinfo info;
        if (sysinfo(&info) != 0) {
            return errno;
        }
        *seconds = (double)info.uptime;
        return 0;
    }
#elif defined(__APPLE__)
    struct timeval boot;
    size_t size = sizeof boot;
    int mib[2] = {CTL_KERN, KERN_BOOTTIME};
    if (sysctl(mib, 2, &boot, &size, NULL, 0) != 0) {
        return errno;
    }
    *seconds = difftime(time(NULL), boot.tv_sec);
    return 0;
#else
    (void)seconds;
    return ENOSYS;
#endif
}

static void call_uptime(const sysinfo_instance *self, rpcd_call *call)
{
    char json[64];
    double seconds = 0;
    int error = read_uptime(&seconds);
    int len;
    if (error != 0) {
        reply_internal_error(self, call, "uptime", error);
        return;
    }
    len = snprintf(json, sizeof json, "%.2f", seconds);
    self->host->reply_result(call, json, (size_t)len);
}

static void call_loadavg(const sysinfo_instance *self, rpcd_call *call)
{
    double load[3];
    char json[128];
    int len;
    if (getloadavg(load, 3) != 3) {
        reply_internal_error(self, call, "getloadavg", ENOSYS);
        return;
    }
    len = snprintf(json, sizeof json, "[%.2f,%.2f,%.2f]", load[0], load[1], load[2]);
    self->host->reply_result(call, json, (size_t)len);
}

/* The sysinfo.load thread: emits the load averages every PERIOD seconds until deinit() stops it. The wait is
 * on a condition variable, not sleep(), so deinit() never waits a whole period. */
static void *emit_load(void *argument)
{
    sysinfo_instance *self = argument;
    struct timespec next;
    clock_gettime(CLOCK_REALTIME, &next);
    pthread_mutex_lock(&self->lock);
    while (!self->stopping) {
        double load[3];
        long nanoseconds = (long)((self->period - (double)(long)self->period) * 1e9);
        next.tv_sec += (time_t)self->period;
        next.tv_nsec += nanoseconds;
        if (next.tv_nsec >= 1000000000L) {
            next.tv_sec += 1;
            next.tv_nsec -= 1000000000L;
        }
        while (!self->stopping && pthread_cond_timedwait(&self->wake, &self->lock, &next) != ETIMEDOUT) {
        }
        if (self->stopping) {
            break;
        }
        pthread_mutex_unlock(&self->lock);
        if (getloadavg(load, 3) == 3) {
            char json[128];
            int len = snprintf(json, sizeof json, "{\"loadavg\":[%.2f,%.2f,%.2f]}", load[0], load[1], load[2]);
            self->host->emit(self->handler, "load", json, (size_t)len);
        }
        pthread_mutex_lock(&self->lock);
    }
    pthread_mutex_unlock(&self->lock);
    return NULL;
}

/* LoadInterval= in seconds (fractions allowed): 5 when unset; 0 turns the event off. Returns -1 when invalid. */
static double load_interval(const sysinfo_instance *self)
{
    const char *text = self->host->config_get(self->handler, "LoadInterval");
    char *end;
    double seconds;
    if (text == NULL) {
        return 5;
    }
    seconds = strtod(text, &end);
    if (end == text || *end != '\0' || !(seconds >= 0) || seconds > 86400) {
        return -1;
    }
    return seconds;
}

static int sysinfo_init(const rpcd_host *host, rpcd_handler *handler, void **instance, char *error,
                        size_t error_size)
{
    sysinfo_instance *self;
    rpcd_log_field field;
    if (host == NULL || host->abi_version != RPCD_MODULE_ABI_VERSION || host->struct_size < RPCD_HOST_MIN_SIZE) {
        snprintf(error, error_size, "unsupported host table");
        return 1;
    }
    self = malloc(sizeof *self);
    if (self == NULL) {
        snprintf(error, error_size, "out of memory");
        return 1;
    }
    self->host = host;
    self->handler = handler;
    self->emitting = 0;
    self->stopping = 0;
    self->period = load_interval(self);
    if (self->period < 0) {
        snprintf(error, error_size, "LoadInterval= must be a number of seconds from 0 to 86400");
        free(self);
        return 1;
    }
    if (self->period > 0 && RPCD_HOST_HAS(host, emit)) {
        pthread_mutex_init(&self->lock, NULL);
        pthread_cond_init(&self->wake, NULL);
        if (pthread_create(&self->emitter, NULL, emit_load, self) != 0) {
            snprintf(error, error_size, "cannot start the sysinfo.load thread");
            free(self);
            return 1;
        }
        self->emitting = 1;
    }
    *instance = self;

    field.name = "SYSINFO_VERSION";
    field.value = SYSINFO_MODULE_VERSION;
    host->log(handler, RPCD_LOG_INFO, "System information module ready", &field, 1);
    return 0;
}

static void sysinfo_call(void *instance, size_t method_index, const char *params_json, size_t params_len,
                         rpcd_call *call)
{
    const sysinfo_instance *self = instance;
    if (reject_params(self, params_json, params_len, call)) {
        return;
    }
    switch (method_index) {
    case METHOD_HOSTNAME:
        call_hostname(self, call);
        break;
    case METHOD_UPTIME:
        call_uptime(self, call);
        break;
    case METHOD_LOADAVG:
        call_loadavg(self, call);
        break;
    default:
        self->host->reply_error(call, -32601, "Method not found", NULL, 0);
        break;
    }
}

static void sysinfo_deinit(void *instance)
{
    sysinfo_instance *self = instance;
    if (self->emitting) {
        pthread_mutex_lock(&self->lock);
        self->stopping = 1;
        pthread_cond_signal(&self->wake);
        pthread_mutex_unlock(&self->lock);
        pthread_join(self->emitter, NULL);
        pthread_cond_destroy(&self->wake);
        pthread_mutex_destroy(&self->lock);
    }
    free(self);
}

static const rpcd_method sysinfo_methods[] = {
    {
        sizeof(rpcd_method), "hostname", "Returns the host name.", NULL, 0, "{\"type\":\"string\"}", RPCD_METHOD_READ_ONLY, NULL,
    },
    {
        sizeof(rpcd_method), "uptime", "Returns the seconds since the system booted.", NULL, 0,
        "{\"type\":\"number\",\"minimum\":0}", RPCD_METHOD_MAY_BLOCK | RPCD_METHOD_READ_ONLY, NULL,
    },
    {
        sizeof(rpcd_method), "loadavg", "Returns the 1, 5 and 15 minute load averages.", NULL, 0,
        "{\"type\":\"array\",\"items\":{\"type\":\"number\"},\"minItems\":3,\"maxItems\":3}", RPCD_METHOD_READ_ONLY, NULL,
    },
};

static const rpcd_event sysinfo_events[] = {
    {
        sizeof(rpcd_event), "load", "The 1, 5 and 15 minute load averages, every LoadInterval= seconds.",
        "{\"type\":\"object\",\"properties\":{\"loadavg\":{\"type\":\"array\",\"items\":{\"type\":\"number\"},"
        "\"minItems\":3,\"maxItems\":3}},\"required\":[\"loadavg\"]}",
    },
};

/* The [Config] keys sysinfo reads: rpcd refuses a handler with any other (a typo), naming it. */
static const char *const sysinfo_config_keys[] = {"LoadInterval", NULL};

static const rpcd_module sysinfo_module = {
    RPCD_MODULE_ABI_VERSION,
    sizeof(rpcd_module),
    "sysinfo",
    SYSINFO_MODULE_VERSION,
    "Reports the host name, uptime and load averages.",
    sysinfo_methods,
    sizeof sysinfo_methods / sizeof sysinfo_methods[0],
    sysinfo_init,
    sysinfo_call,
    sysinfo_deinit,
    sysinfo_events,
    sizeof sysinfo_events / sizeof sysinfo_events[0],
    NULL, /* cancel: every call is answered before call() returns */
    sysinfo_config_keys,
};

const rpcd_module *rpcd_module_entry_v1(void)
{
    return &sysinfo_module;
}
