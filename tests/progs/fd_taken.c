/* After its first CUDA call the program puts a blocking pipe of its own on
 * descriptor 256 (a control channel dup2'ed onto a fixed number), where the
 * shim keeps libunwind's memory-check pipe when the descriptor limit allows
 * (fdlift.c), then allocates from 40 depths of recursion 100 times. libunwind
 * read from the program's pipe and the program hung. Prints "done".
 * fd_taken list: prints its open descriptors instead, after the first call. */
#include <cuda_runtime_api.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

__attribute__((noinline)) static void deep(int d)
{
    if (d > 0) {
        deep(d - 1);
        __asm__ volatile("");
        return;
    }
    void *p;
    if (cudaMalloc(&p, 4096) == cudaSuccess)
        cudaFree(p);
}

/* Calls each(fd, target) for every open descriptor of this process. */
static void each_fd(void (*each)(int fd, const char *target, void *arg), void *arg)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        char path[300], target[4096];
        snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
        ssize_t n = readlink(path, target, sizeof target - 1);
        if (n > 0) {
            target[n] = 0;
            each(atoi(e->d_name), target, arg);
        }
    }
    if (d)
        closedir(d);
}

static void print_fd(int fd, const char *target, void *arg)
{
    (void)arg;
    printf("%d %s\n", fd, target);
}

static void find_shm(int fd, const char *target, void *arg)
{
    size_t n = strlen(target);
    if (n > 4 && !strcmp(target + n - 4, "-shm"))
        *(int *)arg = fd;
}

/* list: after the first CUDA call, prints "N TARGET" for each open descriptor */
static int list(void)
{
    usleep(300000);   /* the writer has opened the trace */
    each_fd(print_fd, NULL);
    return 0;
}

/* shm: puts its own file (mine.dat in the working directory) on the trace's
 * -shm's descriptor, allocates on, and prints "locks N" for the POSIX locks
 * /proc/locks lists on its file meanwhile */
static int shm(void)
{
    usleep(300000);   /* the writer has its -shm open */
    int fd = -1;
    each_fd(find_shm, &fd);
    int mine = open("mine.dat", O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || mine < 0 || write(mine, "0123456789", 10) != 10 || dup2(mine, fd) != fd)
        return 4;
    struct stat st;
    fstat(mine, &st);
    char ino[64];
    snprintf(ino, sizeof ino, ":%lu ", (unsigned long)st.st_ino);
    int locks = 0;
    for (int i = 0; i < 3000; i++) {
        void *p;
        if (cudaMalloc(&p, 4096) == cudaSuccess)
            cudaFree(p);
        if (i % 100 == 0) {
            FILE *f = fopen("/proc/locks", "r");
            char line[512];
            while (f && fgets(line, sizeof line, f))
                locks += strstr(line, ino) && strstr(line, "POSIX");
            if (f)
                fclose(f);
            usleep(2000);
        }
    }
    printf("locks %d\n", locks);
    return 0;
}

int main(int argc, char **argv)
{
    void *p;
    if (cudaMalloc(&p, 1) != cudaSuccess)
        return 3;
    cudaFree(p);
    if (argc > 1 && !strcmp(argv[1], "list"))
        return list();
    if (argc > 1 && !strcmp(argv[1], "shm"))
        return shm();
    int ctl[2];
    if (pipe(ctl) || dup2(ctl[0], 256) != 256)
        return 4;
    for (int i = 0; i < 100; i++)
        for (int d = 0; d < 40; d++)
            deep(d);
    printf("done\n");
    return 0;
}
