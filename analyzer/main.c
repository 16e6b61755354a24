/* main.c - gputrace's entry point: finds the command's row in the command
 * table (commands.c) and runs it; everything else about the command line is
 * data in cli.h's tables, read by cli.c. */
#include <stdio.h>

#include "cli.h"

int main(int argc, char **argv)
{
    if (argc < 2) {
        gt_usage_print(stderr);
        return GT_EXIT_USAGE;
    }
    const struct gt_command *cmd = gt_command_find(argv[1]);
    if (!cmd)
        return gt_unknown_command(argv[1]);
    return gt_command_main(cmd, argc - 2, argv + 2);
}
