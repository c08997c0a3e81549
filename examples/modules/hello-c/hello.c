/*
 * hello.c -- a complete rpcd module in C: serves hello.greet(name), answering "Hello, NAME!".
 *
 *     make                                   # builds hello.so
 *     rpcd --handlers-dir . --module-dir .   # with hello.conf from this directory
 *     rpcctl call hello.greet Ann            # "Hello, Ann!"
 *
 * [Config] Greeting= replaces "Hello". See docs/MODULES.md in the rpcd sources.
 */
#include <rpcd_module.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__)
#define EXPORT __attribute__((visibility("default")))
#else
#define EXPORT
#endif

/* Per-handler state: the host table and handle (to answer and log) and the configured greeting. */
typedef struct hello {
    const rpcd_host *host;
    rpcd_handler *handler;
    char *greeting;
} hello;

static int hello_init(const rpcd_host *host, rpcd_handler *handler, void **instance, char *error,
                      size_t error_size)
{
    hello *self;
    const char *greeting;
    if (host->abi_version != RPCD_MODULE_ABI_VERSION || host->struct_size < RPCD_HOST_MIN_SIZE) {
        snprintf(error, error_size, "unsupported host table");
        return 1;
    }
    greeting = host->config_get(handler, "Greeting");
    if (greeting == NULL) {
        greeting = "Hello";
    }
    if (strpbrk(greeting, "\"\\") != NULL) {
        /* Keeps the JSON building below trivial; a real module would escape. */
        snprintf(error, error_size, "Greeting= must not contain quotes or backslashes");
        return 1;
    }
    self = malloc(sizeof *self);
    if (self == NULL || (self->greeting = malloc(strlen(greeting) + 1)) == NULL) {
        free(self);
        snprintf(error, error_size, "out of memory");
        return 1;
    }
    strcpy(self->greeting, greeting); /* config_get's string is only valid until deinit: copy it */
    self->host = host;
    self->handler = handler;
    *instance = self;
    return 0;
}

static void hello_deinit(void *instance)
{
    hello *self = instance;
    free(self->greeting);
    free(self);
}

/* --- A very small reader for the params, which rpcd has already checked to be valid JSON. --- */

static const char *skip_space(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) {
        p++;
    }
    return p;
}

/* P is at a '"': returns the position after the closing quote. */
static const char *skip_string(const char *p, const char *end)
{
    for (p++; p < end && *p != '"'; p++) {
        if (*p == '\\') {
            p++;
        }
    }
    return p + 1;
}

/* Skips one complete value. */
static const char *skip_value(const char *p, const char *end)
{
    int depth = 0;
    do {
        p = skip_space(p, end);
        if (*p == '"') {
            p = skip_string(p, end);
        } else if (*p == '[' || *p == '{') {
            depth++;
            p++;
        } else if (*p == ']' || *p == '}') {
            depth--;
            p++;
        } else if (*p == ',' || *p == ':') {
            p++;
        } else {
            while (p < end && strchr(",:]} \t\r\n", *p) == NULL) {
                p++;
            }
        }
    } while (depth > 0 && p < end);
    return p;
}

static void invalid_params(const hello *self, rpcd_call *call, const char *detail)
{
    char data[128];
    int len = snprintf(data, sizeof data, "{\"detail\":\"%s\"}", detail);
    self->host->reply_error(call, -32602, "Invalid params", data, (size_t)len);
}

/* Finds the name parameter: the first element of an array, or member "name" of an object. Sets *name to
 * the string token (quotes included) or NULL when absent; returns a detail for -32602, or NULL. */
static const char *find_name(const char *p, const char *end, const char **name, const char **name_end)
{
    *name = NULL;
    p = skip_space(p, end);
    if (p == end) {
        return NULL; /* no params */
    }
    if (*p == '[') {
        p = skip_space(p + 1, end);
        if (*p == ']') {
            return NULL;
        }
        if (*p == '"') {
            *name = p;
            *name_end = skip_string(p, end);
            p = *name_end;
        } else if (*p == 'n') {
            p += 4; /* null counts as absent */
        } else {
            return "parameter 'name': expected a string";
        }
        p = skip_space(p, end);
        return *p == ']' ? NULL : "too many parameters: expected at most 1";
    }
    for (p = skip_space(p + 1, end); *p == '"';) { /* an object: "key": value, ... */
        const char *key = p;
        const char *key_end = skip_string(p, end);
        const char *value = skip_space(skip_space(key_end, end) + 1, end);
        if (key_end - key != 6 || memcmp(key, "\"name\"", 6) != 0) {
            return "unknown parameter";
        }
        if (*value == '"') {
            *name = value;
            *name_end = skip_string(value, end);
        } else if (*value != 'n') {
            return "parameter 'name': expected a string";
        }
        p = skip_space(skip_value(value, end), end);
        if (*p == ',') {
            p = skip_space(p + 1, end);
        }
    }
    return NULL;
}

static void hello_call(void *instance, size_t method_index, const char *params, size_t params_len,
                       rpcd_call *call)
{
    const hello *self = instance;
    const char *name = NULL;
    const char *name_end = NULL;
    const char *problem;
    char *result;
    size_t name_len;
    int len;
    (void)method_index; /* one method only */

    problem = find_name(params, params + params_len, &name, &name_end);
    if (problem != NULL) {
        invalid_params(self, call, problem);
        return;
    }
    /* The string token stays escaped as sent, so it can go into the JSON result as it is. */
    if (name == NULL) {
        name = "\"world\"";
        name_end = name + 7;
    }
    name_len = (size_t)(name_end - name) - 2;
    result = malloc(strlen(self->greeting) + name_len + 8);
    if (result == NULL) {
        rpcd_log_field field = {"OPERATION", "malloc"};
        self->host->log(self->handler, RPCD_LOG_ERR, "Out of memory", &field, 1);
        self->host->reply_error(call, -32603, "Internal error", NULL, 0);
        return;
    }
    len = sprintf(result, "\"%s, %.*s!\"", self->greeting, (int)name_len, name + 1);
    self->host->reply_result(call, result, (size_t)len); /* the host copies it before returning */
    free(result);
}

static const rpcd_param greet_params[] = {
    {"name", "{\"type\":\"string\"}", "Whom to greet (default: world).", RPCD_PARAM_OPTIONAL},
};

static const rpcd_method hello_methods[] = {
    /* greet changes nothing: read-only, so the access rules' AllowRead= peers may call it. */
    {sizeof(rpcd_method), "greet", "Returns a greeting for name.", greet_params, 1, "{\"type\":\"string\"}",
     RPCD_METHOD_READ_ONLY, NULL /* errors_json: none beyond the standard ones */},
};

static const rpcd_module hello_module = {
    RPCD_MODULE_ABI_VERSION,
    sizeof(rpcd_module),
    "hello",
    "1.0.0",
    "Greets whoever asks.",
    hello_methods,
    1,
    hello_init,
    hello_call,
    hello_deinit,
};

EXPORT const rpcd_module *rpcd_module_entry_v1(void)
{
    return &hello_module;
}
