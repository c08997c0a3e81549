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
    if (host->abi_version != RPCD_MODULE_ABI_VERSION || !RPCD_HOST_HAS(host, param)) {
        snprintf(error, error_size, "needs rpcd 0.5 or later (bound parameters)");
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

/* greet's params are bound by rpcd (RPCD_METHOD_BIND_PARAMS below): it has already answered -32602 for
 * anything but an optional string "name", by position or by name, so this only reads parameter 0. */
static void hello_call(void *instance, size_t method_index, const char *params, size_t params_len,
                       rpcd_call *call)
{
    const hello *self = instance;
    size_t name_len;
    const char *name = self->host->param(call, 0, &name_len); /* the JSON text, "Ann"; NULL when absent */
    char *result;
    int len;
    (void)method_index; /* one method only */
    (void)params;       /* the same values as one array, [name], for modules that parse it themselves */
    (void)params_len;

    if (name == NULL) {
        name = "\"world\"";
        name_len = 7;
    }
    /* A JSON string's text without its quotes is still escaped, so it goes into the result as it is
     * (rpcd_param_string would unescape it, for a module that needs the characters). */
    result = malloc(strlen(self->greeting) + name_len + 8);
    if (result == NULL) {
        rpcd_log_field field = {"OPERATION", "malloc"};
        self->host->log(self->handler, RPCD_LOG_ERR, "Out of memory", &field, 1);
        self->host->reply_error(call, -32603, "Internal error", NULL, 0);
        return;
    }
    len = sprintf(result, "\"%s, %.*s!\"", self->greeting, (int)name_len - 2, name + 1);
    self->host->reply_result(call, result, (size_t)len); /* the host copies it before returning */
    free(result);
}

static const rpcd_param greet_params[] = {
    {"name", "{\"type\":\"string\"}", "Whom to greet (default: world).", RPCD_PARAM_OPTIONAL},
};

static const rpcd_method hello_methods[] = {
    /* greet changes nothing: read-only, so the access rules' AllowRead= peers may call it. rpcd binds its
     * params to greet_params and checks them before hello_call sees them. */
    {sizeof(rpcd_method), "greet", "Returns a greeting for name.", greet_params, 1, "{\"type\":\"string\"}",
     RPCD_METHOD_READ_ONLY | RPCD_METHOD_BIND_PARAMS, NULL /* errors_json: none beyond the standard ones */},
};

/* The [Config] keys hello reads: rpcd refuses a handler with any other (a typo), naming it. */
static const char *const hello_config_keys[] = {"Greeting", NULL};

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
    NULL, /* events: none */
    0,
    NULL, /* cancel: nothing to stop early */
    hello_config_keys,
};

EXPORT const rpcd_module *rpcd_module_entry_v1(void)
{
    return &hello_module;
}
