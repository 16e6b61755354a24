/* A program started with fd 2 closed (`2>&-`): the data file it opens gets
 * fd 2, and it calls CUDA before writing its data there. Traced, the file
 * must hold its data alone: no shim line (the summary, a failure to create
 * the trace) may land in it. Exit 3 if the file did not get fd 2.
 * usage: fd2_data FILE */
#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    void *p;
    for (int i = 0; i < 10; i++) {
        cudaMalloc(&p, 4096);
        cudaFree(p);
    }
    if (write(fd, "DATA\n", 5) != 5)
        return 4;
    return fd == 2 ? 0 : 3;
}
