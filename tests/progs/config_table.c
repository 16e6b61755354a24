/* Prints the shim's configuration table (shim/config.c, linked in directly):
 * one line per variable, "NAME<TAB>DEFAULT<TAB>HELP". tests/test_config.py
 * compares it with the README's Configuration table. */
#include <stdio.h>

#include "config.h"

int main(void)
{
    for (size_t i = 0; i < gt_config_nvars; i++)
        printf("%s\t%s\t%s\n", gt_config_vars[i].name, gt_config_vars[i].def, gt_config_vars[i].help);
    return 0;
}
