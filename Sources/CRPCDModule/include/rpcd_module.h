/*
 * rpcd_module.h -- the ABI between rpcd and its plugin handler modules.
 *
 * SYNOPSIS
 *     #include <rpcd_module.h>
 *
 *     const rpcd_module *rpcd_module_entry_v1(void);
 *
 * DESCRIPTION
 *     A module is a shared library that exports one symbol, RPCD_MODULE_ENTRY_SYMBOL
 *     ("rpcd_module_entry_v1"). rpcd calls it once after dlopen() and receives a pointer to a
 *     static rpcd_module descriptor: the module's name, version, description, its methods with
 *     their parameters and JSON Schemas, and three functions: init, call and deinit.
 *
 *     Modules never link against rpcd. Everything they need from the daemon (answering a call,
 *     logging, reading their configuration) comes through the rpcd_host table handed to init.
 *     This is also what lets a Swift module work: Swift code compiled into two images exists
 *     twice (its own type metadata and globals), so no Swift value or type ever crosses this
 *     boundary -- only the C types below.
 *
 * LIFECYCLE
 *     1. rpcd dlopen()s the file and calls rpcd_module_entry_v1().
 *     2. It checks abi_version == RPCD_MODULE_ABI_VERSION and struct_size, the names and the
 *        methods. A module that fails a check is refused with a log entry naming the file and
 *        the reason; other handlers keep serving.
 *     3. For each handler configured with this module (a module may serve several handlers,
 *        e.g. two kv stores), rpcd calls init() with the handler's [Config] values. init()
 *        stores its per-instance state in *instance.
 *     4. call() is invoked for every call to one of the methods, concurrently, from several
 *        threads. Methods without RPCD_METHOD_MAY_BLOCK are called on an event-loop thread
 *        and must return quickly, answering at once or later from another thread. Methods
 *        with RPCD_METHOD_MAY_BLOCK are called on a bounded worker pool and may block.
 *     5. When the handler is removed or replaced (reload, shutdown), rpcd waits until the module
 *        has answered every call it was given -- also calls whose caller already got the timeout
 *        error -- then calls deinit(instance). A module that never answers a call is never
 *        de-initialised.
 *        The library itself is never unloaded (dlclose would leave the Swift runtime with
 *        dangling pointers), so static data stays valid for the life of the process.
 *
 * ANSWERING A CALL
 *     Each call receives an opaque rpcd_call handle. Answer it exactly once, from any thread,
 *     now or later, with host->reply_result() or host->reply_error(). After that the handle is
 *     invalid. A second answer is ignored and logged; a late answer after the handler's
 *     Timeout= has expired is dropped safely. A call that is never answered is answered with
 *     the timeout error if a Timeout= is configured, and otherwise hangs its client.
 *
 * HANDLES
 *     rpcd_call and rpcd_handler pointers are not addresses: they are unguessable tokens the
 *     host looks up when they come back, so a handle used after its end (an answer to a call
 *     already answered, a log line after deinit) is ignored instead of reaching freed memory,
 *     and no module can answer another module's calls or log as another handler. Never
 *     dereference them, and use each only within its lifetime:
 *       rpcd_call     from call() until the first reply_result()/reply_error() for it;
 *       rpcd_handler  from init() until deinit() returns (also for a thread of the module's
 *                     own: stop it, or stop it logging, in deinit).
 *
 * STRINGS AND JSON
 *     All strings are UTF-8. JSON arguments are passed as pointer + length and are NOT
 *     NUL-terminated. params_json is valid only during the call() invocation: copy it to keep
 *     it. Text handed to the host is copied before the host function returns.
 *
 * BOUND PARAMETERS
 *     A method with RPCD_METHOD_BIND_PARAMS (rpcd 0.5) has its params bound by rpcd before call(),
 *     with the rules Swift modules and rpcd's own services follow (docs/MODULES.md, "Typed
 *     parameters"): params by position or by name, no parameter that is not declared, every
 *     parameter without RPCD_PARAM_OPTIONAL given, null for an optional one meaning absent, and each
 *     value checked against its schema's "type", "enum", "minimum" and "maximum". Wrong params are
 *     answered -32602 by rpcd and never reach call(). call() then receives params_json as a JSON
 *     array with one element per declared parameter, in declared order, null for an absent one, and
 *     host->param(call, i, &len) gives element i alone (NULL when absent). The rpcd_param_* readers
 *     at the end of this header turn one into a C string, number or boolean. Such a module checks
 *     RPCD_HOST_HAS(host, param) in init: an older rpcd ignores the flag and passes params as sent.
 *
 * CANCELLATION
 *     A caller may give up on a call: it cancelled it (rpc.cancel, docs/PROTOCOL.md), its
 *     deadline passed, or its connection closed. rpcd then answers the caller at once, stops
 *     counting the call against the in-flight limits, and tells the module twice over: the
 *     module's cancel() (if it has one) is called once, from any thread, and
 *     host->call_cancelled(call) returns 1 from then on. The call handle stays valid until the
 *     module answers it as usual; that answer is dropped. Long-running methods poll
 *     call_cancelled() or act on cancel() to stop early; others need do nothing.
 *     The handler's Timeout= passing is told the same way (the caller gets -32003 instead),
 *     except that the call keeps its MaxConcurrency= slot until the module answers.
 *
 * EVENTS
 *     A module declares the events it emits in events[] (name, summary, payload schema), and
 *     sends one with host->emit(handler, "changed", payload_json, len) from any thread, at any
 *     time between init() and the return of deinit(). rpcd delivers it to every client
 *     subscribed to SERVICE.EVENT (rpc.subscribe, docs/PROTOCOL.md) and never blocks the
 *     module: each subscription has a bounded queue, and a subscriber that falls behind loses
 *     events, not the module's time. emit() copies the payload before it returns.
 *
 * COMPATIBILITY
 *     Structures only ever grow at the end. Every structure starts with struct_size so both
 *     sides can tell which fields the other knows. A module built against an older header
 *     keeps working with a newer rpcd; RPCD_MODULE_ABI_VERSION changes only when that cannot
 *     be kept, and then the entry symbol's name changes with it.
 *
 * HISTORY
 *     ABI 1 (rpcd 0.1): rpcd_module, rpcd_method, rpcd_param, rpcd_host with reply_result,
 *                       reply_error, log, config_get.
 *     ABI 1 (rpcd 0.2): method flag RPCD_METHOD_READ_ONLY (older rpcd ignores it; older modules
 *                       lack it, so their methods count as state-changing for access rules).
 *                       Handles became unguessable tokens with the lifetimes under HANDLES
 *                       (no change for modules that never dereferenced them).
 *     ABI 1 (rpcd 0.3): rpcd_host gains call_cancelled and emit; rpcd_module gains events,
 *                       n_events and cancel; rpcd_event. rpcd loads modules built against
 *                       older headers (it reads a field only when the module's struct_size
 *                       covers it); a module that uses the new host functions checks
 *                       host->struct_size first (RPCD_HOST_HAS).
 *     ABI 1 (rpcd 0.4): rpcd_method gains errors_json (listed by rpc.discover under the
 *                       method's "errors") and flag RPCD_METHOD_BY_POSITION. rpcd reads
 *                       errors_json only when the method's struct_size covers it; older rpcd
 *                       ignores both.
 *     ABI 1 (rpcd 0.5): method flag RPCD_METHOD_BIND_PARAMS and rpcd_host gains param (see BOUND
 *                       PARAMETERS), with the rpcd_param_* readers in this header. Methods without
 *                       the flag get params_json as sent, as before; older rpcd ignores the flag.
 *                       rpcd_module gains config_keys: [Config] is checked against them (read only
 *                       when the module's struct_size covers it; older rpcd ignores it).
 *                       rpcd_method gains result_name, the result's name in rpc.discover (read
 *                       only when the method's struct_size covers it; older rpcd says "result").
 *     ABI 1 (rpcd 0.6): method flag RPCD_METHOD_ANY_PARAMS: a method that declares no params but
 *                       takes any (rpc.discover says so); older rpcd ignores it. rpcd_module gains
 *                       config_params and n_config_params: [Config] values checked against their
 *                       schemas (read only when the module's struct_size covers them; older rpcd
 *                       ignores them). rpcd_host gains state_directory (check RPCD_HOST_HAS).
 *
 * SEE ALSO
 *     docs/MODULES.md, rpcd.conf(5) (handlers.d), examples in Sources/Modules/.
 */
#ifndef RPCD_MODULE_H
#define RPCD_MODULE_H

#include <stddef.h>
#include <stdint.h>
#if !defined(__swift__)
#include <errno.h>  /* for the rpcd_param_* readers */
#include <stdlib.h>
#include <string.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define RPCD_MODULE_ABI_VERSION 1
#define RPCD_MODULE_ENTRY_SYMBOL "rpcd_module_entry_v1"

/* Opaque handle of one call; answered exactly once through rpcd_host. */
typedef struct rpcd_call rpcd_call;

/* Opaque handle of one handler instance, for logging and configuration. */
typedef struct rpcd_handler rpcd_handler;

/* Log priorities: the syslog(3) levels, as journald stores them. */
enum {
    RPCD_LOG_ERR = 3,
    RPCD_LOG_WARNING = 4,
    RPCD_LOG_NOTICE = 5,
    RPCD_LOG_INFO = 6,
    RPCD_LOG_DEBUG = 7,
};

/* One structured log field: a journal-style NAME (upper case, digits, underscore) and a value. */
typedef struct rpcd_log_field {
    const char *name;
    const char *value;
} rpcd_log_field;

/* What the host offers a module. Handed to init(); valid for the life of the process. */
typedef struct rpcd_host {
    uint32_t abi_version;   /* RPCD_MODULE_ABI_VERSION of the host */
    uint32_t struct_size;   /* sizeof(rpcd_host) of the host */

    /* Answers CALL with RESULT_JSON (one complete JSON value, not NUL-terminated). */
    void (*reply_result)(rpcd_call *call, const char *result_json, size_t result_len);

    /* Answers CALL with a JSON-RPC error. CODE outside -32768..-32000 is the module's own;
     * MESSAGE is a short sentence (NUL-terminated); DATA_JSON may be NULL (data_len 0). */
    void (*reply_error)(rpcd_call *call, int64_t code, const char *message,
                        const char *data_json, size_t data_len);

    /* Logs MESSAGE (a constant sentence) at PRIORITY with N_FIELDS extra fields. The host adds
     * RPCD_SERVICE and RPCD_MODULE. May be called from any thread, also during init. */
    void (*log)(rpcd_handler *handler, int priority, const char *message,
                const rpcd_log_field *fields, size_t n_fields);

    /* The value of KEY in the handler's [Config] section, or NULL when not set. The string
     * stays valid until deinit. */
    const char *(*config_get)(rpcd_handler *handler, const char *key);

    /* rpcd 0.3: 1 when the caller no longer waits for CALL (see CANCELLATION), else 0. Cheap
     * enough to poll in a loop; any thread. */
    int (*call_cancelled)(rpcd_call *call);

    /* rpcd 0.3: sends event EVENT (a name from the module's events[], without the service)
     * with PAYLOAD_JSON (one complete JSON value, not NUL-terminated) to the handler's
     * subscribers (see EVENTS). Returns 0 when accepted (also with no subscriber), -1 when
     * EVENT is not declared, the payload is not one JSON value, or HANDLER has ended. Never
     * blocks; any thread. */
    int (*emit)(rpcd_handler *handler, const char *event, const char *payload_json,
                size_t payload_len);

    /* rpcd 0.5: the JSON text of parameter INDEX (its position in the method's params[]) of CALL,
     * a call of a method with RPCD_METHOD_BIND_PARAMS (see BOUND PARAMETERS), with *LENGTH set to
     * its length. NULL and *LENGTH 0 when the parameter is absent, INDEX is not below n_params,
     * the method does not bind its params, or CALL is not open. Not NUL-terminated; valid until
     * CALL is answered. Any thread. */
    const char *(*param)(rpcd_call *call, size_t index, size_t *length);

    /* rpcd 0.6: the absolute path of HANDLER's state directory ([Handler] StateDirectory=, beneath
     * /var/lib/rpcd), or NULL when the handler sets none. rpcd made it before init, the module may
     * create, write and delete files beneath it (also in its sandbox), and it keeps its content across
     * restarts, reloads and updates. Replace a file atomically: write a temporary file in the same
     * directory, fsync it, rename it over the old one. The string stays valid until deinit; any thread. */
    const char *(*state_directory)(rpcd_handler *handler);
} rpcd_host;

/* The size every ABI 1 host table has at least (rpcd 0.1's, up to config_get): check
 * host->struct_size against this, not sizeof(rpcd_host), so that an older rpcd loads the module. */
#define RPCD_HOST_MIN_SIZE offsetof(rpcd_host, call_cancelled)

/* Whether HOST (a const rpcd_host *) offers FIELD: a module built against a newer header than
 * the rpcd it runs in checks this before using a function added after ABI 1's first table,
 * e.g. RPCD_HOST_HAS(host, emit). */
#define RPCD_HOST_HAS(host, field) \
    ((host)->struct_size >= offsetof(rpcd_host, field) + sizeof((host)->field) && (host)->field != NULL)

/* Parameter flags. */
#define RPCD_PARAM_OPTIONAL (1u << 0)

/* One parameter, in positional order; by-name calls use NAME. */
typedef struct rpcd_param {
    const char *name;          /* an identifier: letters, digits, '_' */
    const char *schema_json;   /* a JSON Schema, e.g. "{\"type\":\"number\"}"; NULL for any value */
    const char *summary;       /* may be NULL */
    uint32_t flags;            /* RPCD_PARAM_* */
} rpcd_param;

/* Method flags. */
#define RPCD_METHOD_MAY_BLOCK (1u << 0)   /* call() may block: run it on the worker pool */
/* The method changes no state (it only reads or computes): access rules' AllowRead= lets peers
 * call it (docs/SECURITY.md). Without it a method counts as state-changing, which only Allow=
 * peers may call. Declare it only when true: it is what protects the rest. */
#define RPCD_METHOD_READ_ONLY (1u << 1)
/* rpcd 0.4: the method takes its params by position only (a list of any length, as calc.sum):
 * rpc.discover says "paramStructure":"by-position" instead of "either". rpcd does not enforce it;
 * the module answers -32602 for params by name. */
#define RPCD_METHOD_BY_POSITION (1u << 2)
/* rpcd 0.5: rpcd binds and checks the params against params[] before call(), answering -32602 for
 * wrong ones, and hands the values over by position (see BOUND PARAMETERS). Not together with
 * RPCD_METHOD_BY_POSITION (a list of any length has no declared positions): such a module is refused. */
#define RPCD_METHOD_BIND_PARAMS (1u << 3)
/* rpcd 0.6: the method declares no params (n_params 0) yet takes any, as sent: echo.echo returns
 * whatever it is given. rpc.discover then says "x-rpcd-params": {} (any JSON value, or none) instead
 * of leaving a client to read "params": [] as "takes none". Without it, a method with n_params 0 is
 * described as taking none. Not together with RPCD_METHOD_BIND_PARAMS (which binds to none). */
#define RPCD_METHOD_ANY_PARAMS (1u << 4)

typedef struct rpcd_method {
    uint32_t struct_size;      /* sizeof(rpcd_method) */
    const char *name;          /* within the service: "add" serves "calc.add" */
    const char *summary;       /* may be NULL */
    const rpcd_param *params;
    size_t n_params;
    const char *result_schema_json;  /* may be NULL */
    uint32_t flags;            /* RPCD_METHOD_* */
    /* rpcd 0.4: the errors the method answers with beyond the standard ones, for rpc.discover's
     * "errors": a JSON array of {"code": N, "message": "..."}, e.g.
     * "[{\"code\":1,\"message\":\"Division by zero\"}]". NULL for none. */
    const char *errors_json;
    /* rpcd 0.5: the name rpc.discover gives the result (its content descriptor's "name"), e.g.
     * "greeting"; an identifier as parameter names are. NULL: "result". */
    const char *result_name;
} rpcd_method;

/* One event a module emits (rpcd 0.3). Subscribers name it SERVICE.NAME. */
typedef struct rpcd_event {
    uint32_t struct_size;      /* sizeof(rpcd_event) */
    const char *name;          /* within the service, as method names: "changed" is "kv.changed" */
    const char *summary;       /* may be NULL */
    const char *schema_json;   /* JSON Schema of the payload; NULL for any value */
} rpcd_event;

typedef struct rpcd_module {
    uint32_t abi_version;      /* RPCD_MODULE_ABI_VERSION */
    uint32_t struct_size;      /* sizeof(rpcd_module) */
    const char *name;          /* default service name: lower case letters, digits, '-' */
    const char *version;       /* the module's own version, e.g. "1.2.0" */
    const char *description;   /* one sentence */
    const rpcd_method *methods;
    size_t n_methods;

    /* Creates one instance for HANDLER. Returns 0 and sets *instance on success; on failure
     * returns non-zero and writes a NUL-terminated reason into error (at most error_size bytes). */
    int (*init)(const rpcd_host *host, rpcd_handler *handler, void **instance,
                char *error, size_t error_size);

    /* Runs method METHOD_INDEX (into methods[]) with PARAMS_JSON: an array, an object, or
     * empty (params_len 0) when the caller sent no params. Answer CALL through the host. */
    void (*call)(void *instance, size_t method_index, const char *params_json, size_t params_len,
                 rpcd_call *call);

    /* Destroys INSTANCE; no call() of it is running or will run. May be NULL. */
    void (*deinit)(void *instance);

    /* rpcd 0.3: the events the module emits (see EVENTS); NULL and 0 for none. Like methods,
     * the array steps by events[0].struct_size. */
    const rpcd_event *events;
    size_t n_events;

    /* rpcd 0.3: told that the caller of CALL gave up (see CANCELLATION); may be NULL. Called at
     * most once per call, from any thread, possibly while call() still runs, or while another
     * thread of the module answers CALL: a module that keeps per-call state for cancel() guards
     * it with its own lock. Must not block. */
    void (*cancel)(void *instance, rpcd_call *call);

    /* rpcd 0.5: the [Config] keys the module reads, a NULL-terminated array, e.g.
     * {"Greeting", NULL}. rpcd then checks each handler's [Config] section against them as it checks
     * [Handler]: a key not listed (other than X-...) refuses the handler, with "did you mean" for a
     * near miss, and rpcd --check-config reports it. NULL: the module does not say, and [Config] is
     * not checked (modules built before rpcd 0.5). */
    const char *const *config_keys;

    /* rpcd 0.6: what each [Config] value must be, declared as a method's params are: one rpcd_param
     * per key (NAME the key, which counts as listed in config_keys; SCHEMA_JSON its JSON Schema, whose
     * "type" (integer, number, boolean or string), "enum", "minimum" and "maximum" rpcd checks;
     * SUMMARY), N_CONFIG_PARAMS of them. rpcd reads the INI text as the type says (decimal numbers;
     * booleans as yes/no, true/false, on/off, 1/0) and refuses a handler whose value does not fit,
     * naming the file and line, before anything changes: in rpcd --check-config, and before init at
     * start-up and reload. init still reads the text with config_get. NULL and 0: not checked. */
    const rpcd_param *config_params;
    size_t n_config_params;
} rpcd_module;

/* The entry point every module exports. (Not declared for Swift, where the SDK defines it.) */
typedef const rpcd_module *(*rpcd_module_entry_fn)(void);
#if !defined(__swift__)
const rpcd_module *rpcd_module_entry_v1(void);
#endif

/*
 * READERS OF BOUND PARAMETERS (rpcd 0.5)
 *     Each reads parameter INDEX of CALL (a method with RPCD_METHOD_BIND_PARAMS) through
 *     host->param. rpcd has checked the value against the parameter's schema, so a reader of the
 *     schema's type fails only for an absent parameter:
 *
 *     rpcd_param_string   unescapes a JSON string into OUT (SIZE bytes, always NUL-terminated when
 *                         SIZE > 0) and returns its length in bytes, which is SIZE or more when it
 *                         was cut short (as snprintf); -1 when absent or not a string.
 *     rpcd_param_double   stores a number in *OUT; returns 0, or -1 when absent or not a number.
 *     rpcd_param_int64    stores an integer in *OUT (2.0 and 2e3 count, as JSON Schema's "integer"
 *                         does); returns 0, or -1 when absent, not an integer, or out of range.
 *     rpcd_param_bool     stores 1 or 0 in *OUT; returns 0, or -1 when absent or not a boolean.
 *
 *     All return -1 in an rpcd without host->param. Any thread; until CALL is answered.
 */
#if !defined(__swift__)
static inline const char *rpcd_param_text_(const rpcd_host *host, rpcd_call *call, size_t index, size_t *length)
{
    *length = 0;
    return RPCD_HOST_HAS(host, param) ? host->param(call, index, length) : NULL;
}

/* Appends code point CP as UTF-8 at OUT[N] when it fits in SIZE - 1; returns the new length. */
static inline size_t rpcd_param_utf8_(char *out, size_t size, size_t n, unsigned long cp)
{
    char bytes[4];
    size_t count, i;
    if (cp < 0x80) {
        bytes[0] = (char)cp;
        count = 1;
    } else if (cp < 0x800) {
        bytes[0] = (char)(0xC0 | (cp >> 6));
        bytes[1] = (char)(0x80 | (cp & 0x3F));
        count = 2;
    } else if (cp < 0x10000) {
        bytes[0] = (char)(0xE0 | (cp >> 12));
        bytes[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        bytes[2] = (char)(0x80 | (cp & 0x3F));
        count = 3;
    } else {
        bytes[0] = (char)(0xF0 | (cp >> 18));
        bytes[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        bytes[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        bytes[3] = (char)(0x80 | (cp & 0x3F));
        count = 4;
    }
    for (i = 0; i < count; i++, n++) {
        if (n + 1 < size) {
            out[n] = bytes[i];
        }
    }
    return n;
}

static inline unsigned long rpcd_param_hex4_(const char *p)
{
    unsigned long value = 0;
    int i;
    for (i = 0; i < 4; i++) {
        char c = p[i];
        value = value * 16 + (unsigned long)(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
    }
    return value;
}

static inline long rpcd_param_string(const rpcd_host *host, rpcd_call *call, size_t index, char *out, size_t size)
{
    size_t length, n = 0;
    const char *p = rpcd_param_text_(host, call, index, &length);
    const char *end;
    if (p == NULL || length < 2 || p[0] != '"') {
        return -1;
    }
    end = p + length - 1; /* the closing quote; rpcd passes only valid JSON */
    for (p++; p < end; p++) {
        unsigned long cp = (unsigned char)*p;
        if (cp == '\\') {
            p++;
            switch (*p) {
            case 'b': cp = '\b'; break;
            case 'f': cp = '\f'; break;
            case 'n': cp = '\n'; break;
            case 'r': cp = '\r'; break;
            case 't': cp = '\t'; break;
            case 'u':
                cp = rpcd_param_hex4_(p + 1);
                p += 4;
                if (cp >= 0xD800 && cp < 0xDC00 && end - p > 6 && p[1] == '\\' && p[2] == 'u') {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (rpcd_param_hex4_(p + 3) - 0xDC00);
                    p += 6;
                }
                break;
            default: cp = (unsigned char)*p; break; /* \" \\ \/ */
            }
            n = rpcd_param_utf8_(out, size, n, cp);
        } else {
            if (n + 1 < size) {
                out[n] = (char)cp;
            }
            n++;
        }
    }
    if (size > 0) {
        out[n < size ? n : size - 1] = '\0';
    }
    return (long)n;
}

/* Copies a number's text into BUFFER (NUL-terminated); 0, or -1 when absent, not a number or too long. */
static inline int rpcd_param_number_text_(const rpcd_host *host, rpcd_call *call, size_t index, char buffer[64])
{
    size_t length;
    const char *p = rpcd_param_text_(host, call, index, &length);
    if (p == NULL || length == 0 || length >= 64 || (p[0] != '-' && (p[0] < '0' || p[0] > '9'))) {
        return -1;
    }
    memcpy(buffer, p, length);
    buffer[length] = '\0';
    return 0;
}

static inline int rpcd_param_double(const rpcd_host *host, rpcd_call *call, size_t index, double *out)
{
    char buffer[64];
    if (rpcd_param_number_text_(host, call, index, buffer) != 0) {
        return -1;
    }
    *out = strtod(buffer, NULL);
    return 0;
}

static inline int rpcd_param_int64(const rpcd_host *host, rpcd_call *call, size_t index, int64_t *out)
{
    char buffer[64];
    char *end;
    double value;
    long long whole;
    if (rpcd_param_number_text_(host, call, index, buffer) != 0) {
        return -1;
    }
    errno = 0;
    whole = strtoll(buffer, &end, 10);
    if (*end == '\0') {
        if (errno == ERANGE) {
            return -1;
        }
        *out = (int64_t)whole;
        return 0;
    }
    value = strtod(buffer, NULL); /* 2.0, 2e3 */
    if (!(value >= -9223372036854775808.0 && value < 9223372036854775808.0) || value != (double)(int64_t)value) {
        return -1;
    }
    *out = (int64_t)value;
    return 0;
}

static inline int rpcd_param_bool(const rpcd_host *host, rpcd_call *call, size_t index, int *out)
{
    size_t length;
    const char *p = rpcd_param_text_(host, call, index, &length);
    if (p != NULL && length == 4 && memcmp(p, "true", 4) == 0) {
        *out = 1;
        return 0;
    }
    if (p != NULL && length == 5 && memcmp(p, "false", 5) == 0) {
        *out = 0;
        return 0;
    }
    return -1;
}
#endif /* !__swift__ */

#ifdef __cplusplus
}
#endif

#endif /* RPCD_MODULE_H */
