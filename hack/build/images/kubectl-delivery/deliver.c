/* The kubectl-delivery image's entrypoint: copies /kubectl into the directory given as its one argument (an
 * emptyDir the launcher also mounts), executable by all. Static and alone in its image, as the pause binary is:
 * the image needs no shell and no libc. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIRECTORY (copies /kubectl into it)\n", argv[0]);
        return 2;
    }
    char target[4096];
    if (snprintf(target, sizeof target, "%s/kubectl", argv[1]) >= (int)sizeof target) {
        fprintf(stderr, "directory name too long\n");
        return 2;
    }
    int in = open("/kubectl", O_RDONLY);
    if (in < 0) { perror("/kubectl"); return 1; }
    int out = open(target, O_WRONLY | O_CREAT | O_TRUNC, 0755);
    if (out < 0) { perror(target); return 1; }
    char buf[1 << 16];
    ssize_t n;
    while ((n = read(in, buf, sizeof buf)) > 0) {
        for (ssize_t done = 0; done < n;) {
            ssize_t w = write(out, buf + done, (size_t)(n - done));
            if (w < 0) { perror(target); return 1; }
            done += w;
        }
    }
    if (n < 0) { perror("/kubectl"); return 1; }
    if (fchmod(out, 0755) != 0 || close(out) != 0) { perror(target); return 1; }
    printf("kubectl copied to %s\n", target);
    return 0;
}
