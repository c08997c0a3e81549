/* hostname-program: sysinfo.hostname's work as a program handler written in C against
 * docs/HANDLER-PROTOCOL.md, for bench/program.py: how much the protocol costs against the isolated C module.
 * Reads lines with one buffer, answers each call with the host name, and writes the answers of one read in one
 * write (as a module host writes the answers of one read of its link). */
#define _GNU_SOURCE 1
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char declaration[] =
    "{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"protocol\":1,\"services\":[{\"name\":\"hostprog\",\"version\":\"1.0.0\","
    "\"methods\":[{\"name\":\"hostname\",\"params\":[],\"readOnly\":true,\"concurrent\":true}]}]}}\n";

int main(void)
{
    char host[256];
    if (gethostname(host, sizeof host) != 0) strcpy(host, "unknown");
    static char input[1 << 20], output[1 << 20];
    size_t held = 0;
    int declared = 0;
    for (;;) {
        ssize_t got = read(0, input + held, sizeof input - held);
        if (got <= 0) return 0;
        held += (size_t)got;
        size_t out = 0, start = 0;
        char *newline;
        while ((newline = memchr(input + start, '\n', held - start)) != NULL) {
            *newline = 0;
            const char *line = input + start;
            start = (size_t)(newline - input) + 1;
            if (!declared) {
                declared = 1;
                memcpy(output + out, declaration, sizeof declaration - 1);
                out += sizeof declaration - 1;
                continue;
            }
            const char *id = strstr(line, "\"id\":");
            if (id == NULL || strstr(line, "rpc.cancel") != NULL) continue;
            long number = strtol(id + 5, NULL, 10);
            out += (size_t)snprintf(output + out, sizeof output - out, "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"result\":\"%s\"}\n", number, host);
            if (out > sizeof output - 512) {
                if (write(1, output, out) != (ssize_t)out) return 1;
                out = 0;
            }
        }
        memmove(input, input + start, held - start);
        held -= start;
        if (out > 0 && write(1, output, out) != (ssize_t)out) return 1;
    }
}
