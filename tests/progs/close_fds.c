/* A program that closes every descriptor above 2 while traced (as daemons,
 * closefrom() and some launchers do), then opens files of its own, which get
 * the numbers SQLite held, writes a known line to each, and goes on calling
 * CUDA so the writer has more to write. Before closing, it waits for a line
 * on stdin: the test sends it once the first burst is committed to the trace,
 * as a fixed sleep cannot promise that of a writer under a sanitizer on a
 * loaded machine. Prints nothing; exit code 5.
 * usage: close_fds DIR N_ALLOCS < go-line */
#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void burst(int n)
{
    for (int i = 0; i < n; i++) {
        void *p;
        if (cudaMalloc(&p, 4096) != cudaSuccess || cudaFree(p) != cudaSuccess)
            exit(3);
    }
}

int main(int argc, char **argv)
{
    int n = argc > 2 ? atoi(argv[2]) : 20000;
    burst(n);
    char go;
    while (read(0, &go, 1) == 1 && go != '\n')
        ;
    struct timespec ts = {0, 200 * 1000000L};
    for (int fd = 3; fd < 1024; fd++)
        close(fd);
    char path[4096];
    for (int i = 0; i < 8; i++) {
        snprintf(path, sizeof path, "%s/own%d.dat", argv[1], i);
        int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || write(fd, "the program's own data\n", 23) != 23)
            return 4;
    }
    burst(n);
    nanosleep(&ts, NULL);
    burst(n);
    return 5;
}
