/* terminal.c - what the reports print to a terminal is the trace's text, and
 * a trace can come from anyone: a function name, a file path or a command
 * line holding ESC ] 52 (write the clipboard), ESC ] 0 (the window's title)
 * or a carriage return that rewrites a line would act on the reader's
 * terminal. When standard output is a terminal it goes through this filter:
 * C0 controls other than tab and newline, DEL, and C1 controls (UTF-8
 * U+0080-U+009F) print as '?', and bytes that are not UTF-8 (a name from a
 * binary in another encoding, a planted byte) as U+FFFD. So does a report's text wherever it goes (a
 * pipe to head or a file later cat'ed reaches a terminal too); JSON, the
 * export and the page get the bytes unchanged (the JSON escapes them; the
 * HTML page sets text, never markup). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/* A UTF-8 sequence begun and not yet complete (a stdio buffer can end
 * inside one): its bytes, how many it needs, the range of its second byte. */
static unsigned char seq[4];
static int seq_have, seq_need;
static unsigned char seq_lo, seq_hi;

static const char REPLACEMENT[] = "\xef\xbf\xbd";   /* U+FFFD, as the JSON and the pages write a bad byte */

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

/* Appends to out (room for 4 bytes more is kept by the caller) what the
 * terminal may be given for byte c: well-formed UTF-8 as it is (the
 * ranges of gt_utf8_len: no overlong form, surrogate or code point past
 * U+10FFFF), C0 and C1 controls but tab and newline as '?', any other byte
 * (a trace's string that is not UTF-8) as U+FFFD. */
static size_t clean_byte(unsigned char c, char *out)
{
    size_t o = 0;
    if (seq_have) {
        unsigned char lo = seq_have == 1 ? seq_lo : 0x80, hi = seq_have == 1 ? seq_hi : 0xbf;
        if (c >= lo && c <= hi) {
            seq[seq_have++] = c;
            if (seq_have < seq_need)
                return 0;
            seq_have = 0;
            if (seq[0] == 0xc2 && seq[1] <= 0x9f) {   /* a C1 control */
                out[0] = '?';
                return 1;
            }
            memcpy(out, seq, (size_t)seq_need);
            return (size_t)seq_need;
        }
        seq_have = 0;   /* cut short: the bytes so far are one bad sequence, c is read afresh */
        memcpy(out, REPLACEMENT, 3);
        o = 3;
    }
    if (c < 0x80) {
        out[o++] = (c < 0x20 && c != '\t' && c != '\n') || c == 0x7f ? '?' : (char)c;
        return o;
    }
    seq_lo = 0x80, seq_hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf)
        seq_need = 2;
    else if (c >= 0xe0 && c <= 0xef)
        seq_need = 3, seq_lo = c == 0xe0 ? 0xa0 : 0x80, seq_hi = c == 0xed ? 0x9f : 0xbf;
    else if (c >= 0xf0 && c <= 0xf4)
        seq_need = 4, seq_lo = c == 0xf0 ? 0x90 : 0x80, seq_hi = c == 0xf4 ? 0x8f : 0xbf;
    else
        seq_need = 0;
    if (!seq_need) {
        memcpy(out + o, REPLACEMENT, 3);
        return o + 3;
    }
    seq[0] = c;
    seq_have = 1;
    return o;
}

static ssize_t clean_write(void *cookie, const char *buf, size_t n)
{
    (void)cookie;
    char out[4096];
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        o += clean_byte((unsigned char)buf[i], out + o);
        if (o >= sizeof out - 8) {
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
    if (seq_have) {   /* the output ended inside a sequence */
        seq_have = 0;
        return write_all(REPLACEMENT, 3);
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
