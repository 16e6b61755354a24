/* Descriptors the shim's libraries hold, against a program that reuses
 * numbers (fdlift.c).
 *   fd_reuse jit      CUDA called through a few bytes of machine code made at
 *                     run time (no unwind information: libunwind checks
 *                     addresses through its pipe there), then every
 *                     descriptor from 3 closed (closefrom, as daemons do) and
 *                     six files of its own opened, each holding "X"; CUDA
 *                     called through the code again. Every file must still
 *                     hold "X" alone.
 *   fd_reuse openlog FILE   started with stdout closed (>&-): the file it
 *                     opens (once the trace has started) gets fd 1, and its
 *                     printf goes there.
 * x86-64 only (the machine code). */
#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

__attribute__((noinline)) static void alloc_free(void)
{
    void *p;
    cudaMalloc(&p, 4096);
    cudaFree(p);
}

int main(int argc, char **argv)
{
    if (argc > 2 && !strcmp(argv[1], "openlog")) {
        alloc_free();
        /* the writer thread starts with this first call and opens its files
         * (an instant each on the lowest free number): what is asked is where
         * the shim's descriptors stay, not that race (CI: 1 run in 4 lost it) */
        usleep(200000);
        int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
        printf("stdout fd=%d\n", fd);
        fflush(stdout);
        alloc_free();
        return 0;
    }
    if (argc < 2 || strcmp(argv[1], "jit"))
        return 2;
    /* push rbp; mov rbp, rsp; movabs rax, alloc_free; call rax; pop rbp; ret */
    unsigned char code[] = {0x55, 0x48, 0x89, 0xe5, 0x48, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xd0, 0x5d, 0xc3};
    void (*target)(void) = alloc_free;
    memcpy(code + 6, &target, sizeof target);
    unsigned char *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return 3;
    memcpy(m, code, sizeof code);
    void (*jit)(void) = (void (*)(void))m;
    jit();
    for (int fd = 3; fd < 1024; fd++)
        close(fd);
    for (int i = 0; i < 6; i++) {
        char name[32];
        snprintf(name, sizeof name, "own%d.dat", i);
        int fd = open(name, O_RDWR | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || write(fd, "X", 1) != 1)
            return 4;
        lseek(fd, 0, SEEK_SET);
    }
    for (int i = 0; i < 200; i++)
        jit();
    return 0;
}
