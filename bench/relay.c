/*
 * relay: the kernel's floor for what an isolated call adds, on this machine, in the isolation rows' setting
 * (bench/README.md, "One call at a time").
 *
 *     cc -O2 -o relay bench/relay.c && ./relay 0 && ./relay 1      [ROUND_TRIPS, default 50000]
 *
 * A client on CPU 1 sends 64 bytes over a socketpair and waits for them to come back, ROUND_TRIPS times. A
 * server on CPU 0 sends them back itself (`relay 0`: an in-process call), or over a second socketpair to a
 * second process on CPU 0 that sends them back to it (`relay 1`: an isolated call, rpcd and a module host on
 * one core). Both server processes wait in epoll_wait, then read, then write, as an event loop does: the
 * system calls and context switches an isolated call adds, and nothing else. Prints the mean round trip, and
 * each server process's CPU time per call (getrusage) on standard error.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { SIZE = 64 };

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof set, &set);
}

static double cpu_microseconds(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1e6 + usage.ru_utime.tv_usec + usage.ru_stime.tv_usec;
}

static int read_message(int fd, char *buffer) {
    for (int got = 0; got < SIZE;) {
        ssize_t n = read(fd, buffer + got, SIZE - got);
        if (n <= 0) return -1;
        got += n;
    }
    return 0;
}

/* An event loop: what `from` sends goes to `to` (or back, without `to`); what `to` sends goes back to `from`.
   Ends when `from` closes. */
static void serve(int from, int to, const char *name) {
    int epoll = epoll_create1(0);
    struct epoll_event event = {.events = EPOLLIN, .data.fd = from};
    epoll_ctl(epoll, EPOLL_CTL_ADD, from, &event);
    if (to >= 0) {
        event.data.fd = to;
        epoll_ctl(epoll, EPOLL_CTL_ADD, to, &event);
    }
    double start = cpu_microseconds();
    long calls = 0;
    char buffer[SIZE];
    for (;;) {
        struct epoll_event ready[2];
        int count = epoll_wait(epoll, ready, 2, -1);
        for (int i = 0; i < count; i++) {
            int fd = ready[i].data.fd;
            if (read_message(fd, buffer) < 0) {
                if (calls > 0) fprintf(stderr, "  %s: %.1f us of CPU per call\n", name, (cpu_microseconds() - start) / calls);
                return;
            }
            if (fd == from) calls++;
            if (write(to >= 0 && fd == from ? to : from, buffer, SIZE) != SIZE) return;
        }
    }
}

int main(int argc, char **argv) {
    int relay = argc > 1 && atoi(argv[1]);
    int round_trips = argc > 2 ? atoi(argv[2]) : 50000;
    int client[2], link[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, client) != 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, link) != 0) return 1;
    if (fork() == 0) {
        pin(0);
        close(client[0]);
        if (relay && fork() == 0) {
            close(client[1]);
            close(link[0]);
            serve(link[1], -1, "second process");
            _exit(0);
        }
        close(link[1]);
        serve(client[1], relay ? link[0] : -1, "server");
        close(link[0]);
        wait(NULL);
        _exit(0);
    }
    close(client[1]);
    close(link[0]);
    close(link[1]);
    pin(1);
    char buffer[SIZE];
    memset(buffer, 'x', SIZE);
    for (int i = 0; i < 1000 + round_trips; i++) {
        static double start;
        if (i == 1000) start = now();
        if (write(client[0], buffer, SIZE) != SIZE || read_message(client[0], buffer) < 0) return 1;
        if (i == 1000 + round_trips - 1)
            printf("%s: %.1f us per round trip (%d)\n", relay ? "relayed through a second process on CPU 0" : "answered by the server",
                   (now() - start) * 1e6 / round_trips, round_trips);
    }
    fflush(stdout);
    close(client[0]);
    wait(NULL);
    return 0;
}
