/*
 * pause: the process that holds a pod sandbox's namespaces open (chaostoolkit-db's own, built as a static binary
 * with `cc -static -Os -s -o pause pause.c`).
 *
 * It does nothing until SIGINT or SIGTERM arrives, then exits with status 0. As process 1 of a PID namespace it
 * adopts every orphan there, so it reaps whatever child ends. The wanted signals stay blocked except inside
 * sigsuspend(), so a signal that arrives between a check and the wait is never lost.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t stop_requested;

static void request_stop(int signo)
{
    stop_requested = signo;
}

static void child_changed(int signo)
{
    (void)signo; /* only wakes sigsuspend(); the main loop reaps */
}

static void reap_ended_children(void)
{
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
}

static int install(int signo, void (*handler)(int), int flags)
{
    struct sigaction action;

    memset(&action, 0, sizeof action);
    action.sa_handler = handler;
    action.sa_flags = flags;
    sigfillset(&action.sa_mask);
    return sigaction(signo, &action, NULL);
}

int main(int argc, char **argv)
{
    sigset_t watched, waiting;

    if (argc > 1 && (strcmp(argv[1], "-v") == 0 || strcmp(argv[1], "--version") == 0)) {
        puts("pause (chaostoolkit-db)");
        return 0;
    }
    sigemptyset(&watched);
    sigaddset(&watched, SIGINT);
    sigaddset(&watched, SIGTERM);
    sigaddset(&watched, SIGCHLD);
    if (sigprocmask(SIG_BLOCK, &watched, &waiting) != 0
        || install(SIGINT, request_stop, 0) != 0
        || install(SIGTERM, request_stop, 0) != 0
        || install(SIGCHLD, child_changed, SA_NOCLDSTOP) != 0) {
        perror("pause: cannot set up signal handling");
        return 1;
    }
    sigdelset(&waiting, SIGINT);
    sigdelset(&waiting, SIGTERM);
    sigdelset(&waiting, SIGCHLD);
    while (!stop_requested) {
        reap_ended_children();
        sigsuspend(&waiting);
    }
    reap_ended_children();
    fprintf(stderr, "pause: stopping on signal %d\n", (int)stop_requested);
    return 0;
}
