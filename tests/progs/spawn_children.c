/* A traced parent that starts children between two bursts of CUDA calls, the
 * ways a C program does: vfork + execve (a failing execve first, as a PATH
 * search makes), posix_spawn, and system(). Each way starts one child that
 * never calls CUDA (/bin/true) and one that does (this program, "child");
 * vfork_exec also starts one whose every exec fails, so it ends in _exit().
 * usage: spawn_children vfork_exec|posix_spawn|system
 *        spawn_children child       (10 allocation/free pairs) */
#include <cuda_runtime_api.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static void pairs(int n, size_t size)
{
    for (int i = 0; i < n; i++) {
        void *p;
        if (cudaMalloc(&p, size) != cudaSuccess || cudaFree(p) != cudaSuccess)
            exit(3);
    }
}

static int wait_for(pid_t pid)
{
    int st;
    if (pid < 0 || waitpid(pid, &st, 0) != pid)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static int run_vfork(char *const argv[])
{
    pid_t pid = vfork();
    if (pid == 0) {
        char *const none[] = {"/nonexistent/gputrace-test", NULL};
        execve(none[0], none, environ); /* fails: the hooks run it in our memory */
        execve(argv[0], argv, environ);
        _exit(127);
    }
    return wait_for(pid);
}

static int run_posix_spawn(char *const argv[])
{
    pid_t pid;
    if (posix_spawn(&pid, argv[0], NULL, NULL, argv, environ) != 0)
        return -1;
    return wait_for(pid);
}

static int run_system(char *const argv[])
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "%s%s%s", argv[0], argv[1] ? " " : "", argv[1] ? argv[1] : "");
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    if (!strcmp(argv[1], "child")) {
        pairs(10, 1 << 12);
        return 0;
    }
    int (*start)(char *const[]) = !strcmp(argv[1], "vfork_exec")    ? run_vfork
                                  : !strcmp(argv[1], "posix_spawn") ? run_posix_spawn
                                  : !strcmp(argv[1], "system")      ? run_system
                                                                    : NULL;
    if (!start)
        return 2;
    pairs(100, 1 << 16);
    char *const quiet[] = {"/bin/true", NULL};
    char *const cuda[] = {argv[0], "child", NULL};
    if (start(quiet) != 0 || start(cuda) != 0)
        return 4;
    char *const missing[] = {"/nonexistent/gputrace-missing", NULL};
    if (start == run_vfork && start(missing) != 127)
        return 5;
    pairs(100, 1 << 16);
    return 0;
}
