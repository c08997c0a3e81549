import Foundation
import XCTest

/// Compiles small real modules with the system C compiler against the real header, so the host is tested
/// through actual `dlopen`, symbol lookup and C calls. `defines` select misbehaviours.
enum TestModule {
    static let headerDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources/CRPCDModule/include").path

    static let source = #"""
    #include <pthread.h>
    #include <semaphore.h>
    #include <stdio.h>
    #include <stdlib.h>
    #include <string.h>
    #include <time.h>
    #include <unistd.h>
    #include <rpcd_module.h>

    #ifndef ABI_VERSION
    #define ABI_VERSION RPCD_MODULE_ABI_VERSION
    #endif
    #ifndef MODULE_NAME
    #define MODULE_NAME "testmod"
    #endif
    #ifndef ENTRY
    #define ENTRY rpcd_module_entry_v1
    #endif
    #ifndef MODULE_SIZE
    #define MODULE_SIZE sizeof(rpcd_module)
    #endif
    #ifndef OK_ERRORS
    #define OK_ERRORS NULL
    #endif
    #ifdef CONFIG_KEYS
    static const char *const config_keys[] = {"Greeting", "FailInit", NULL};
    #define CONFIG_KEYS_FIELD config_keys
    #else
    #define CONFIG_KEYS_FIELD NULL
    #endif

    int test_deinit_count = 0;
    int test_init_count = 0;

    /* Posted by every deinit, which runs on whichever thread answered the last call: tests wait on it. */
    static sem_t deinits;
    static pthread_once_t deinits_once = PTHREAD_ONCE_INIT;
    static void deinits_init(void) { sem_init(&deinits, 0, 0); }

    /* Waits up to `seconds` for `s` to be posted; 0 when it was, -1 on timeout. */
    static int wait_posted(sem_t *s, int seconds) {
        struct timespec deadline;
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_sec += seconds;
        return sem_timedwait(s, &deadline);
    }

    /* Waits up to `seconds` for a deinit; 0 when there was one, -1 on timeout. */
    int test_wait_for_deinit(int seconds) {
        pthread_once(&deinits_once, deinits_init);
        return wait_posted(&deinits, seconds);
    }
    static const rpcd_host *host;

    struct instance { rpcd_handler *handler; };
    struct later { rpcd_call *call; int ms; };

    /* The sleeps below are the module's behaviour under test (a late answer, a blocking or stalling call),
     * not waits of the test's own. */
    static void *answer_later(void *arg) {
        struct later *l = arg;
        usleep(l->ms * 1000);
        host->reply_result(l->call, "\"late\"", 6);
        free(l);
        return NULL;
    }

    /* Cancellation, as tests observe it: calls of the module's cancel(), and wait_cancel calls that saw
     * call_cancelled() turn 1 (each posts `cancels_seen` too, so tests wait on an event, not a sleep). */
    int test_cancel_calls = 0;
    int test_cancel_polled = 0;
    static sem_t cancels_seen;
    static pthread_once_t cancels_once = PTHREAD_ONCE_INIT;
    static void cancels_init(void) { sem_init(&cancels_seen, 0, 0); }

    /* Waits up to `seconds` for a wait_cancel call to see its cancellation; 0 when one did, -1 on timeout. */
    int test_wait_for_cancel(int seconds) {
        pthread_once(&cancels_once, cancels_init);
        return wait_posted(&cancels_seen, seconds);
    }

    /* Polls call_cancelled every millisecond for up to 10 s, then answers (the answer is dropped if cancelled). */
    static void *wait_for_cancel(void *arg) {
        rpcd_call *c = arg;
        for (int i = 0; i < 10000; i++) {
            if (host->call_cancelled(c)) {
                __atomic_add_fetch(&test_cancel_polled, 1, __ATOMIC_SEQ_CST);
                pthread_once(&cancels_once, cancels_init);
                sem_post(&cancels_seen);
                host->reply_error(c, 1, "stopped: cancelled", NULL, 0);
                return NULL;
            }
            usleep(1000);  /* polling is what a C module does: call_cancelled() has no callback */
        }
        host->reply_result(c, "\"not cancelled\"", 15);
        return NULL;
    }

    /* The await_cancel call in flight: only cancel() answers it. */
    static rpcd_call *awaiting_cancel = NULL;

    static void cancel(void *instance, rpcd_call *c) {
        (void)instance;
        __atomic_add_fetch(&test_cancel_calls, 1, __ATOMIC_SEQ_CST);
        rpcd_call *expected = c;
        if (__atomic_compare_exchange_n(&awaiting_cancel, &expected, NULL, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
            host->reply_error(c, 1, "stopped: cancelled", NULL, 0);
    }

    static int init(const rpcd_host *h, rpcd_handler *handler, void **out, char *error, size_t size) {
        host = h;
        __atomic_add_fetch(&test_init_count, 1, __ATOMIC_SEQ_CST);
        if (h->config_get(handler, "FailInit")) {
            snprintf(error, size, "asked to fail: %s", h->config_get(handler, "FailInit"));
            return 1;
        }
        struct instance *i = calloc(1, sizeof *i);
        i->handler = handler;
        rpcd_log_field fields[] = {{"TEST_FIELD", "x"}};
        h->log(handler, RPCD_LOG_INFO, "test module ready", fields, 1);
        *out = i;
        return 0;
    }

    static void call(void *instance, size_t method, const char *params, size_t len, rpcd_call *c) {
        struct instance *i = instance;
        switch (method) {
        case 0: host->reply_result(c, "42", 2); break;                                  /* ok */
        case 1: host->reply_error(c, 7, "Seven", "{\"x\":1}", 7); break;                 /* fail */
        case 2: host->reply_result(c, "{nope", 5); break;                              /* bad_json */
        case 3: host->reply_result(c, "1", 1); host->reply_result(c, "2", 1); break;   /* twice */
        case 4: {                                                                      /* later [ms] */
            struct later *l = malloc(sizeof *l);
            l->call = c;
            l->ms = len > 2 ? atoi(params + 1) : 0;
            pthread_t t;
            pthread_create(&t, NULL, answer_later, l);
            pthread_detach(t);
            break;
        }
        case 5: usleep(300 * 1000); host->reply_result(c, "\"slept\"", 7); break;     /* block (MAY_BLOCK) */
        case 6: {                                                                      /* greeting */
            const char *g = host->config_get(i->handler, "Greeting");
            char buffer[256];
            int n = snprintf(buffer, sizeof buffer, "\"%s\"", g ? g : "none");
            host->reply_result(c, buffer, (size_t)n);
            break;
        }
        case 7: host->reply_result(c, params ? params : "null", params ? len : 4); break; /* echo */
        case 8: {                                                                      /* wait_cancel */
            if (!RPCD_HOST_HAS(host, call_cancelled)) { host->reply_error(c, 2, "no call_cancelled", NULL, 0); break; }
            pthread_t t;
            pthread_create(&t, NULL, wait_for_cancel, c);
            pthread_detach(t);
            break;
        }
        case 10: usleep(30 * 1000); host->reply_result(c, "\"stalled\"", 9); break;  /* stall (no MAY_BLOCK) */
        case 11: __atomic_store_n(&awaiting_cancel, c, __ATOMIC_SEQ_CST); break;        /* await_cancel */
        case 9: {                                                  /* bound(count, label?, loud?): BIND_PARAMS */
            char label[8], out[512];
            int64_t count = -1;
            int loud = -1, n, k;
            size_t absent_length = 99;
            long length = rpcd_param_string(host, c, 1, label, sizeof label);
            const char *loud_text = host->param(c, 2, &absent_length);
            rpcd_param_int64(host, c, 0, &count);
            rpcd_param_bool(host, c, 2, &loud);
            n = snprintf(out, sizeof out, "{\"params\":%.*s,\"count\":%lld,\"length\":%ld,\"loud\":%d,"
                         "\"loud_absent\":%d,\"label\":[", (int)len, params, (long long)count, length, loud,
                         loud_text == NULL && absent_length == 0);
            for (k = 0; length >= 0 && label[k] != '\0'; k++) {
                n += snprintf(out + n, sizeof out - (size_t)n, "%s%d", k ? "," : "", (unsigned char)label[k]);
            }
            n += snprintf(out + n, sizeof out - (size_t)n, "]}");
            host->reply_result(c, out, (size_t)n);
            break;
        }
        }
    }

    static void deinit(void *instance) {
        free(instance);
        test_deinit_count++;
        pthread_once(&deinits_once, deinits_init);
        sem_post(&deinits);
    }

    static const rpcd_param later_params[] = {{"ms", "{\"type\":\"integer\"}", NULL, 0}};
    static const rpcd_param echo_params[] = {{"value", NULL, "anything", RPCD_PARAM_OPTIONAL}};
    static const rpcd_param bound_params[] = {
        {"count", "{\"type\":\"integer\",\"minimum\":0}", NULL, 0},
        {"label", "{\"type\":\"string\"}", NULL, RPCD_PARAM_OPTIONAL},
        {"loud", "{\"type\":\"boolean\"}", NULL, RPCD_PARAM_OPTIONAL},
    };
    static const rpcd_method methods[] = {
        {sizeof(rpcd_method), "ok", "answers 42", NULL, 0, "{\"type\":\"integer\"}", 0, OK_ERRORS, "answer"},
        {sizeof(rpcd_method), "fail", NULL, NULL, 0, NULL, 0},
        {sizeof(rpcd_method), "bad_json", NULL, NULL, 0, NULL, 0},
        {sizeof(rpcd_method), "twice", NULL, NULL, 0, NULL, 0},
        {sizeof(rpcd_method), "later", NULL, later_params, 1, NULL, 0},
        {sizeof(rpcd_method), "block", NULL, NULL, 0, NULL, RPCD_METHOD_MAY_BLOCK},
        {sizeof(rpcd_method), "greeting", NULL, NULL, 0, NULL, 0},
        {sizeof(rpcd_method), "echo", NULL, echo_params, 1, NULL, 0},
        {sizeof(rpcd_method), "wait_cancel", NULL, NULL, 0, NULL, 0},
        {sizeof(rpcd_method), "bound", NULL, bound_params, 3, NULL, RPCD_METHOD_BIND_PARAMS},
        {sizeof(rpcd_method), "stall", "blocks its event loop for 30 ms", NULL, 0, NULL, 0},
        {sizeof(rpcd_method), "await_cancel", "answered only by the module's cancel()", NULL, 0, NULL, 0},
    };
    static const rpcd_module module = {
        ABI_VERSION, MODULE_SIZE, MODULE_NAME, "1.0.0", "A module for the host's tests",
        methods, sizeof methods / sizeof methods[0], init, call, deinit, NULL, 0, cancel, CONFIG_KEYS_FIELD,
    };

    const rpcd_module *ENTRY(void) { return &module; }

    #ifdef SWIFT_VERSION
    /* What a Swift module's SDK exports: the Swift version it was built with. */
    const char *rpcd_module_swift_version(void) { return SWIFT_VERSION; }
    #endif
    """#

    /// Builds the module into `directory` as `name.so` and returns its path.
    static func build(into directory: URL, name: String = "testmod", defines: [String] = []) throws -> String {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let sourcePath = directory.appendingPathComponent("\(name).c").path
        let output = directory.appendingPathComponent("\(name).so").path
        try source.write(toFile: sourcePath, atomically: true, encoding: .utf8)
        let compiler = Process()
        compiler.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        compiler.arguments = ["cc", "-shared", "-fPIC", "-Wall", "-Werror", "-pthread", "-I", headerDirectory]
            + defines.map { "-D\($0)" } + ["-o", output, sourcePath]
        try compiler.run()
        compiler.waitUntilExit()
        XCTAssertEqual(compiler.terminationStatus, 0, "cc failed for \(name)")
        return output
    }

    static func temporaryDirectory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("rpcd-modules-\(UUID().uuidString)")
    }
}
