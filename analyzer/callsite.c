/* callsite.c - how a call site reads in text (and in the HTML report, which
 * gets the same text as each JSON site's "call_site"). A stack is a list of
 * frames, innermost first; what a person needs is the few frames that say
 * whose memory it is and that tell this site from the others listed with it.
 * So, for one listing of sites at a time:
 *   - function names lose parameter lists, template arguments and return
 *     types (PyTorch's run past 2,000 characters): --full-names keeps them;
 *   - a framework allocator's innermost frames, the same for every site,
 *     fold into "[6 allocator frames]" (--allocator-frames shows them), the
 *     dispatcher's plumbing anywhere in the stack into "[9 dispatcher
 *     frames]", and the C library's start-up frames below main go;
 *   - when sites share more leading frames than --frames shows, the shared
 *     ones after the first fold into "[N common frames]", so that the frame
 *     that tells them apart is the next one shown;
 *   - two sites that would still print the same text show the first frame
 *     where they differ, with its full name or its offset in the module.
 * --all-frames folds and drops nothing. JSON's "frames" keep every frame,
 * full names.
 * A stack with Python frames reads as Python: it starts at the innermost
 * frame of the program's own code ("train.py:42 in train_step", not the
 * standard library's or a package's, which is where the program's line
 * is), followed by the Python frames that called it; --native (and
 * --all-frames) shows every frame instead, native ones included, each
 * Python frame where the interpreter ran it. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer.h"
#include "format.h"

/* ---- names */

static int ident_char(char ch)
{
    return isalnum((unsigned char)ch) || ch == '_';
}

/* Index past the bracketed group that starts at s[0] (open), nesting the
 * same brackets; the string's end if it never closes. */
static size_t skip_group(const char *s, char open, char close)
{
    int depth = 0;
    size_t i = 0;
    for (; s[i]; i++) {
        if (s[i] == open)
            depth++;
        else if (s[i] == close && --depth == 0)
            return i + 1;
    }
    return i;
}

void gt_short_function(const char *full, char *out, size_t len)
{
    size_t o = 0;
    /* ch is evaluated whether or not there is room (PUT(*p++) must advance p:
     * a name longer than out, inside a frame with its module after it, looped
     * forever once out was full) */
#define PUT(ch) do { char ch_ = (ch); if (o + 1 < len) out[o++] = ch_; } while (0)
    for (const char *p = full; *p;) {
        if (!strncmp(p, "(anonymous namespace)", 21)) {
            for (int k = 0; k < 21; k++)
                PUT(p[k]);
            p += 21;
        } else if (!strncmp(p, "operator", 8) && (p == full || !ident_char(p[-1])) && !ident_char(p[8])) {
            for (int k = 0; k < 8; k++)
                PUT(p[k]);
            p += 8;
            if ((p[0] == '(' && p[1] == ')') || (p[0] == '[' && p[1] == ']')) {
                PUT(p[0]);
                PUT(p[1]);
                p += 2;
            } else if (*p == ' ') {   /* operator new, operator delete, a conversion */
                PUT(*p++);
                while (ident_char(*p) || *p == ':')
                    PUT(*p++);
            } else {
                while (*p && strchr("<>=!+-*/%^&|~,", *p))
                    PUT(*p++);
            }
        } else if (*p == '<') {
            p += skip_group(p, '<', '>');
        } else if (*p == '(') {
            p += skip_group(p, '(', ')');
        } else if (*p == '[') {       /* [clone .cold], [abi:cxx11] */
            p += skip_group(p, '[', ']');
        } else {
            PUT(*p++);
        }
    }
#undef PUT
    out[o] = 0;
    /* qualifiers after the parameter list */
    static const char *const tails[] = {" const", " volatile", " &&", " &", " noexcept", " "};
    for (int again = 1; again;) {
        again = 0;
        for (size_t k = 0; k < sizeof tails / sizeof tails[0]; k++) {
            size_t n = strlen(out), t = strlen(tails[k]);
            if (n > t && !strcmp(out + n - t, tails[k])) {
                out[n - t] = 0;
                again = 1;
            }
        }
    }
    /* a function template's return type: up to the last space outside
     * "(anonymous namespace)" that does not follow "operator" */
    size_t cut = 0;
    int depth = 0;
    for (size_t i = 0; out[i]; i++) {
        if (out[i] == '(')
            depth++;
        else if (out[i] == ')')
            depth--;
        else if (out[i] == ' ' && depth == 0 && !(i >= 8 && !strncmp(out + i - 8, "operator", 8)))
            cut = i + 1;
    }
    if (cut && out[cut])
        memmove(out, out + cut, strlen(out + cut) + 1);
}

/* The dispatcher's plumbing between a PyTorch operator and its kernel, by
 * the prefix of the short name: kernel wrappers, boxing, the dispatcher
 * itself, the generated at::_ops entry points (call, redispatch), and the
 * autograd and ADInplaceOrView layers. */
static const char *const dispatcher_prefixes[] = {
    "c10::impl::",                       /* wrap_kernel_functor_unboxed_, make_boxed_from_unboxed_functor, ... */
    "c10::Dispatcher::",
    "c10::BoxedKernel",
    "c10::KernelFunction",
    "c10::OperatorHandle",
    "c10::TypedOperatorHandle",
    "at::_ops::",                        /* at::_ops::conv2d::call, ::redispatch */
    "at::redispatch::",
    "at::(anonymous namespace)::wrapper_",   /* generated kernel registration wrappers */
    "at::(anonymous namespace)::(anonymous namespace)::wrapper_",
    "torch::autograd::VariableType::",
    "torch::autograd::autogradNotImplementedFallback",
    "torch::ADInplaceOrView::",
};

static bool is_dispatcher(const char *short_name)
{
    for (size_t q = 0; q < sizeof dispatcher_prefixes / sizeof dispatcher_prefixes[0]; q++)
        if (!strncmp(short_name, dispatcher_prefixes[q], strlen(dispatcher_prefixes[q])))
            return true;
    return false;
}

/* The C library's start-up below main: __libc_start_call_main,
 * __libc_start_main, _start, or an unnamed frame in libc. */
static bool is_startup(const struct gt_frame *f)
{
    if (f->function)
        return !strncmp(f->function, "__libc_start", 12) || !strcmp(f->function, "_start");
    return !strncmp(f->module, "libc.so", 7) || !strncmp(f->module, "libc-", 5);
}

/* ---- one listing */

enum state {
    ST_SHOWN,      /* printed */
    ST_ALLOC,      /* an allocator's leading frame: "[N allocator frames]" */
    ST_DISPATCH,   /* the dispatcher's: "[N dispatcher frames]" */
    ST_COMMON,     /* shared with another listed site: "[N common frames]" */
    ST_HIDDEN,     /* beyond --frames: "... (N more)" */
    ST_STARTUP,    /* the C library's start-up: not printed */
};

enum detail { DETAIL_NONE, DETAIL_OFFSET, DETAIL_FULL };

struct view {
    int32_t site;
    char **f;                    /* gt_trace_frames' strings */
    const struct gt_frame *fi;
    int n;
    char **key;                  /* per frame: the name as printed (NULL: dispatcher frame) */
    int *seq, nseq;              /* the frames that count (neither allocator, dispatcher nor start-up) */
    int a, e;                    /* frames [a, e): after the allocator's, before the start-up's */
    int common;                  /* leading seq frames the same as another listed site's */
    unsigned char *state, *detail;
    unsigned char *omit;         /* frames a Python reading leaves out (native, or inside libraries) */
    int via;                     /* an omitted frame that tells this site from one that reads alike; -1 none */
    int user_line;               /* the program's own innermost Python frame; -1 none */
};

static char *frame_key(const struct gt_opts *o, const struct gt_frame *fi, const char *formatted, int detail)
{
    if (gt_frame_is_backward_mark(fi))
        return gt_xstrdup("[backward: the thread waiting in backward()]");
    if (fi->python) {   /* "train.py:42 in train_step"; the whole path where two sites need it */
        const char *file = fi->file ? fi->file : "?";
        char *s = NULL;
        size_t len = 0;
        FILE *m = gt_xmemstream(&s, &len);
        gt_fputs_shown(detail != DETAIL_NONE || o->full_names ? file : gt_basename(file), m);   /* (a name with a newline) */
        fprintf(m, ":%lld in ", (long long)fi->line);
        gt_fputs_shown(fi->function ? fi->function : "?", m);
        fclose(m);
        return s;
    }
    if (!fi->function)
        return gt_xstrdup(formatted);   /* module+0x... or an address */
    if (detail == DETAIL_FULL)
        return gt_xstrdup(formatted);
    char name[512];
    if (o->full_names)
        snprintf(name, sizeof name, "%s", fi->function);
    else
        gt_short_function(fi->function, name, sizeof name);
    char *s = NULL;
    size_t len = 0;
    FILE *m = gt_xmemstream(&s, &len);
    fprintf(m, "%s (%s", o->full_names ? fi->function : name, *fi->module ? fi->module : "?");
    if (detail == DETAIL_OFFSET)
        fprintf(m, "+0x%llx", (unsigned long long)fi->offset);
    fputc(')', m);
    if (fi->file)
        fprintf(m, " %s:%lld", fi->file, (long long)fi->line);
    fclose(m);
    return s;
}

static int seq_cmp_lcp(const struct view *a, const struct view *b, int *lcp)
{
    int k = 0;
    while (k < a->nseq && k < b->nseq && !strcmp(a->key[a->seq[k]], b->key[b->seq[k]]))
        k++;
    *lcp = k;
    if (k < a->nseq && k < b->nseq)
        return strcmp(a->key[a->seq[k]], b->key[b->seq[k]]);
    return (a->nseq > k) - (b->nseq > k);
}

static struct view *sort_views;   /* qsort has no context argument */
static char **sort_texts;

static int by_seq(const void *x, const void *y)
{
    int lcp;
    return seq_cmp_lcp(&sort_views[*(const size_t *)x], &sort_views[*(const size_t *)y], &lcp);
}

static int by_text(const void *x, const void *y)
{
    return strcmp(sort_texts[*(const size_t *)x], sort_texts[*(const size_t *)y]);
}

/* States of v's frames per the options and --frames. */
static void plan(const struct gt_opts *o, struct view *v)
{
    int all = o->all_frames, a = v->a, e = v->e;
    for (int k = 0; k < v->n; k++)
        v->state[k] = v->omit[k] ? ST_STARTUP : k < a ? ST_ALLOC : k >= e ? ST_STARTUP
                      : v->key[k] ? ST_HIDDEN : ST_DISPATCH;
    if (v->nseq == 0 && a < e) {   /* nothing but the dispatcher: show its first frame */
        v->state[a] = ST_SHOWN;
        return;
    }
    int budget = o->frames, shown = 0, q = 0;
    if (!all && v->common >= budget && v->common < v->nseq) {
        /* what tells this site apart would be out of sight: fold the shared
         * frames after the first, and show it next */
        v->state[v->seq[0]] = ST_SHOWN;
        for (q = 1; q < v->common; q++)
            v->state[v->seq[q]] = ST_COMMON;
        v->state[v->seq[q++]] = ST_SHOWN;
        shown = 2;
    }
    for (; q < v->nseq && shown < budget; q++, shown++)
        v->state[v->seq[q]] = ST_SHOWN;
    /* --native: the native frames first, but never the program's line out
     * of sight (a ctypes call took all four of the default) */
    if (o->native && !all && v->user_line >= 0 && v->state[v->user_line] == ST_HIDDEN)
        v->state[v->user_line] = ST_SHOWN;
}

/* A folded run of count frames whose states are in mask. */
static void put_run(FILE *m, const char **sep, int count, unsigned mask, int to_end)
{
    if (to_end && mask & 1u << ST_HIDDEN) {
        fprintf(m, "%s... (%d more)", *sep, count);
        return;
    }
    const char *what = mask == 1u << ST_DISPATCH ? "dispatcher "
                       : mask == 1u << ST_ALLOC ? "allocator "
                       : mask & 1u << ST_COMMON && !(mask & 1u << ST_HIDDEN) ? "common " : "";
    fprintf(m, "%s[%d %sframe%s]", *sep, count, what, gt_s(count));
    /* "[6 allocator frames] at::native::...": the allocator's lead-in */
    *sep = !**sep && mask == 1u << ST_ALLOC ? " " : " <- ";
}

static char *render(const struct gt_opts *o, struct view *v)
{
    char *s = NULL;
    size_t len = 0;
    FILE *m = gt_xmemstream(&s, &len);
    const char *sep = "";
    for (int k = 0; k < v->n;) {
        if (v->state[k] == ST_SHOWN) {
            char *key = v->detail[k] != DETAIL_NONE || !v->key[k] ? frame_key(o, &v->fi[k], v->f[k], v->detail[k]) : NULL;
            fprintf(m, "%s%s", sep, key ? key : v->key[k]);
            sep = " <- ";
            free(key);
            k++;
            continue;
        }
        int j = k, count = 0;
        unsigned mask = 0;
        /* the allocator's frames fold on their own, never with the rest */
        for (; j < v->n && v->state[j] != ST_SHOWN && (v->state[j] == ST_ALLOC) == (v->state[k] == ST_ALLOC); j++)
            if (v->state[j] != ST_STARTUP) {
                mask |= 1u << v->state[j];
                count++;
            }
        if (count)
            put_run(m, &sep, count, mask, j == v->n);
        k = j;
    }
    if (v->via >= 0) {
        char *key = frame_key(o, &v->fi[v->via], v->f[v->via], v->detail[v->via]);
        fprintf(m, " (via %s)", key);
        free(key);
    }
    fclose(m);
    return s;
}

/* First frame where sites x and y differ: their formatted frames, or the
 * offset of the same function. */
static int first_difference(const struct view *x, const struct view *y)
{
    int k = 0;
    while (k < x->n && k < y->n && !strcmp(x->f[k], y->f[k]) && x->fi[k].offset == y->fi[k].offset)
        k++;
    return k;
}

static void mark_difference(const struct gt_opts *o, struct view *x, const struct view *y, int k)
{
    if (k >= x->n)
        return;
    if (x->omit[k])   /* a Python reading keeps its start: the frame goes at the end, "(via ...)" */
        x->via = k;
    else
        x->state[k] = ST_SHOWN;
    if (k >= y->n)
        return;
    char *kx = frame_key(o, &x->fi[k], x->f[k], DETAIL_NONE), *ky = frame_key(o, &y->fi[k], y->f[k], DETAIL_NONE);
    int d = strcmp(kx, ky) ? DETAIL_NONE : strcmp(x->f[k], y->f[k]) ? DETAIL_FULL : DETAIL_OFFSET;
    if (d > x->detail[k])
        x->detail[k] = (unsigned char)d;
    free(kx);
    free(ky);
}

int gt_site_texts(struct gt_ctx *c, const int32_t *sites, size_t n, char ***out)
{
    const struct gt_opts *o = c->o;
    struct view *v = gt_xcalloc(n + 1, sizeof *v);
    char **texts = gt_xcalloc(n + 1, sizeof *texts);
    int code = GT_EXIT_OK;
    for (size_t i = 0; i < n && !code; i++) {
        struct view *w = &v[i];
        w->site = sites[i];
        code = gt_trace_frames(&c->t, w->site, &w->f, &w->n);
        if (!code)
            code = gt_trace_frame_info(&c->t, w->site, &w->fi, &w->n);
        if (code || w->n == 0)
            continue;
        w->key = gt_xcalloc((size_t)w->n, sizeof *w->key);
        w->seq = gt_xcalloc((size_t)w->n, sizeof *w->seq);
        w->state = gt_xcalloc((size_t)w->n, 1);
        w->detail = gt_xcalloc((size_t)w->n, 1);
        w->omit = gt_xcalloc((size_t)w->n, 1);
        w->via = -1;
        w->user_line = gt_frame_user_python(w->fi, w->n);
        /* a native stack without one source line: the symbolize hint (gt_ctx_print_symbolize_hint) */
        int lined = w->user_line >= 0;
        for (int k = 0; k < w->n && !lined; k++)
            lined = w->fi[k].file != NULL;
        c->unlined_sites |= !lined;
        int user = o->native || o->all_frames ? -1 : w->user_line;
        for (int k = 0; user >= 0 && k < w->n; k++)
            w->omit[k] = !w->fi[k].python || k < user;
        int a = 0;
        if (!o->all_frames && !o->allocator_frames && user < 0)
            while (a + 1 < w->n && gt_frame_is_allocator(w->f[a]))
                a++;
        int e = w->n;
        if (!o->all_frames && user < 0)
            while (e > a + 1 && is_startup(&w->fi[e - 1]))
                e--;
        w->a = a;
        w->e = e;
        for (int k = 0; k < w->n; k++) {
            w->key[k] = frame_key(o, &w->fi[k], w->f[k], DETAIL_NONE);
            char name[512] = "";
            if (w->fi[k].function && !w->fi[k].python)
                gt_short_function(w->fi[k].function, name, sizeof name);
            if (w->omit[k])
                continue;
            if (k == user) {   /* made on an autograd thread for the thread waiting in backward() */
                for (int m = 0; m < k; m++)
                    if (gt_frame_is_backward_mark(&w->fi[m])) {
                        char *b = NULL;
                        size_t len = 0;
                        FILE *mf = gt_xmemstream(&b, &len);
                        fprintf(mf, "backward: %s", w->key[k]);
                        fclose(mf);
                        free(w->key[k]);
                        w->key[k] = b;
                        break;
                    }
            }
            if (!o->all_frames && k >= a && k < e && *name && is_dispatcher(name)) {
                free(w->key[k]);
                w->key[k] = NULL;
            } else if (k >= a && k < e) {
                w->seq[w->nseq++] = k;
            }
        }
    }
    if (code)
        goto out;
    /* leading frames each site shares with another: neighbours in sorted order */
    size_t *ord = gt_xmalloc((n + 1) * sizeof *ord);
    for (size_t i = 0; i < n; i++)
        ord[i] = i;
    sort_views = v;
    gt_qsort(ord, n, sizeof *ord, by_seq);
    for (size_t r = 0; r + 1 < n; r++) {
        int lcp;
        seq_cmp_lcp(&v[ord[r]], &v[ord[r + 1]], &lcp);
        if (lcp > v[ord[r]].common)
            v[ord[r]].common = lcp;
        if (lcp > v[ord[r + 1]].common)
            v[ord[r + 1]].common = lcp;
    }
    for (size_t i = 0; i < n; i++) {
        if (v[i].n == 0) {
            char msg[128];
            if (v[i].site >= 0)
                snprintf(msg, sizeof msg, "(stack %lld: no frames recorded)", (long long)gt_trace_stack_id(&c->t, v[i].site));
            else if (c->t.proc.stack_depth == 0)   /* as gputrace sweep's runs are, by default */
                snprintf(msg, sizeof msg, "(no stacks: traced with stack depth 0; gputrace run --stack-depth 32 records them)");
            else
                snprintf(msg, sizeof msg, "(no stack recorded)");
            texts[i] = gt_xstrdup(msg);
            continue;
        }
        plan(o, &v[i]);
        texts[i] = render(o, &v[i]);
    }
    /* sites that still print alike: show where they differ */
    sort_texts = texts;
    gt_qsort(ord, n, sizeof *ord, by_text);
    for (size_t r = 0; r < n;) {
        size_t g = r + 1;
        while (g < n && !strcmp(texts[ord[g]], texts[ord[r]]))
            g++;
        for (size_t x = r; g - r > 1 && x < g; x++)
            for (size_t y = r; y < g; y++)
                if (x != y && v[ord[x]].n && v[ord[y]].n)
                    mark_difference(o, &v[ord[x]], &v[ord[y]], first_difference(&v[ord[x]], &v[ord[y]]));
        for (size_t x = r; g - r > 1 && x < g; x++)
            if (v[ord[x]].n) {
                free(texts[ord[x]]);
                texts[ord[x]] = render(o, &v[ord[x]]);
            }
        r = g;
    }
    sort_views = NULL;
    sort_texts = NULL;
    free(ord);
out:
    for (size_t i = 0; i < n; i++) {
        for (int k = 0; v[i].key && k < v[i].n; k++)
            free(v[i].key[k]);
        free(v[i].key);
        free(v[i].seq);
        free(v[i].state);
        free(v[i].detail);
        free(v[i].omit);
    }
    free(v);
    if (code) {
        gt_site_texts_free(texts, n);
        texts = NULL;
    }
    *out = texts;
    return code;
}

void gt_site_texts_free(char **texts, size_t n)
{
    for (size_t i = 0; texts && i < n; i++)
        free(texts[i]);
    free(texts);
}
