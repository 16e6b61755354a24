/* N threads each doing M cudaMalloc/cudaFree pairs of 1 KiB (default 8 x
 * 20000): the trace must hold exactly N*M pairs with nothing dropped. */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static int pairs;

static void *work(void *arg)
{
    (void)arg;
    for (int i = 0; i < pairs; i++) {
        void *p;
        if (cudaMalloc(&p, 1024) != cudaSuccess || cudaFree(p) != cudaSuccess)
            abort();
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 8;
    pairs = argc > 2 ? atoi(argv[2]) : 20000;
    pthread_t t[256];
    for (int i = 0; i < n; i++)
        pthread_create(&t[i], NULL, work, NULL);
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    printf("%d\n", n * pairs);
    return 0;
}
