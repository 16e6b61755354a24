/* terminal.c - what the reports print to a terminal is the trace's text, and
 * a trace can come from anyone: a function name, a file path or a command
 * line holding ESC ] 52 (write the clipboard), ESC ] 0 (the window's title)
 * or a carriage return that rewrites a line would act on the reader's
 * terminal. When standard output is a terminal it goes through this filter:
 * C0 controls other than tab and newline, DEL, and C1 controls (UTF-8
 * U+0080-U+009F) print as '?'. So does a report's text wherever it goes (a
 * pipe to head or a file later cat'ed reaches a terminal too); JSON, the
 * export and the page get the bytes unchanged (the JSON escapes them; the
 * HTML page sets text, never markup). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static int pending_c2;   /* the last byte written was 0xC2: a C1 control may follow */

static int write_all(const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(STDOUT_FILENO, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static ssize_t clean_write(void *cookie, const char *buf, size_t n)
{
    (void)cookie;
    char out[4096];
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)buf[i];
        if (pending_c2) {
            pending_c2 = 0;
            if (c >= 0x80 && c <= 0x9f) {
                out[o++] = '?';
                goto next;
            }
            out[o++] = (char)0xc2;
        }
        if (c == 0xc2)
            pending_c2 = 1;
        else if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7f)
            out[o++] = '?';
        else
            out[o++] = (char)c;
    next:
        if (o >= sizeof out - 2) {
            if (write_all(out, o))
                return -1;
            o = 0;
        }
    }
    if (o && write_all(out, o))
        return -1;
    return (ssize_t)n;
}

static int clean_close(void *cookie)
{
    (void)cookie;
    if (pending_c2) {
        pending_c2 = 0;
        return write_all("\xc2", 1);
    }
    return 0;
}

void gt_terminal_guard(const struct gt_command *cmd, int argc, char **argv)
{
    /* a report's text goes through the filter wherever it goes: `gputrace
     * summary t.db | head` reached the terminal with the trace's ESC ] 0 and
     * ESC [ 2 J (a helper's probe); its JSON escapes them, and export's and
     * report's pages are data */
    int json = 0;
    for (int i = 0; i < argc && strcmp(argv[i], "--"); i++)
        json |= !strcmp(argv[i], "--json");
    if (!isatty(STDOUT_FILENO) && (!cmd->report || json))
        return;
    cookie_io_functions_t io = {.write = clean_write, .close = clean_close};
    FILE *f = fopencookie(NULL, "w", io);
    if (!f)
        return;   /* unfiltered rather than nothing */
    setvbuf(f, NULL, isatty(STDOUT_FILENO) ? _IOLBF : _IOFBF, 0);
    stdout = f;
}
