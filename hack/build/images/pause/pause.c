/* The pod sandbox process: sleeps until told to stop, and reaps orphans (it is PID 1 of the pod). */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int sig) { (void)sig; _exit(0); }
static void reap(int sig) { (void)sig; while (waitpid(-1, NULL, WNOHANG) > 0) {} }

int main(void) {
    struct sigaction s = {0}, r = {0};
    s.sa_handler = stop;
    sigaction(SIGINT, &s, NULL);
    sigaction(SIGTERM, &s, NULL);
    r.sa_handler = reap;
    r.sa_flags = SA_NOCLDSTOP;
    sigaction(SIGCHLD, &r, NULL);
    for (;;) pause();
}
