/* main.c - gputrace's entry point: finds the command's row in the command
 * table (commands.c) and runs it; everything else about the command line is
 * data in cli.h's tables, read by cli.c. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "gputrace: no command given; the commands and their options:\n\n");
        gt_usage_print(stderr);
        return GT_EXIT_USAGE;
    }
    const struct gt_command *cmd = gt_command_find(argv[1]);
    if (!cmd && argv[1][0] == '-') {
        /* gputrace --memory pool summary t.db: the line to type, the command first (a review: a hint
         * without the option's value failed when followed) */
        for (int k = 2; k < argc; k++) {
            if (!gt_command_find(argv[k]))
                continue;
            char line[600];
            size_t n = (size_t)snprintf(line, sizeof line, "gputrace %s", argv[k]);
            for (int i = 1; i < argc && n < sizeof line; i++)
                if (i != k)
                    n += (size_t)snprintf(line + n, sizeof line - n, " %s", argv[i]);
            fprintf(stderr, "gputrace: '%.60s' is an option: it goes after the command: %s\n", argv[1], line);
            return GT_EXIT_USAGE;
        }
    }
    if (!cmd)
        return gt_unknown_command(argv[1]);
    gt_terminal_guard(cmd, argc - 2, argv + 2);
    int status = gt_command_main(cmd, argc - 2, argv + 2);
    /* a full disk or a closed pipe under what was printed: a script must not
     * take a cut JSON for an answer */
    errno = 0;
    if ((fflush(stdout) != 0 || ferror(stdout)) && status != GT_EXIT_OUTPUT) {   /* (said already if it is) */
        fprintf(stderr, "gputrace: cannot write to standard output%s%s%s; what was printed is incomplete\n",
                errno ? " (" : "", errno ? strerror(errno) : "", errno ? ")" : "");
        if (status == GT_EXIT_OK || status == GT_EXIT_FAIL_ABOVE)
            status = GT_EXIT_OUTPUT;
    }
    return status;
}
