/* Notes: things the reader of a trace should know (CUPTI unavailable, NVTX
 * taken by another tool, ...). Raised from any thread at any time, even
 * before a trace exists; the writer stores them in the notes table. A note
 * meant for the user also goes to stderr, once, as one line, printed by the
 * writer when it stores it: only a process that writes a trace says it. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "activity.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct gt_note_rec *head, **tail = &head;
static _Atomic int count;

void gt_note(const char *component, bool to_stderr, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    struct gt_note_rec *n = malloc(sizeof *n + strlen(msg) + 1);
    if (!n)
        return;
    n->next = NULL;
    n->t_ns = gt_now_ns();
    n->to_stderr = to_stderr;
    snprintf(n->component, sizeof n->component, "%s", component);
    strcpy(n->message, msg);
    pthread_mutex_lock(&mu);
    *tail = n;
    tail = &n->next;
    atomic_fetch_add(&count, 1);
    pthread_mutex_unlock(&mu);
}

bool gt_notes_pending(void)
{
    return atomic_load_explicit(&count, memory_order_relaxed) != 0;
}

/* Is a note of this component waiting to be written? (A fork child that
 * says again what its parent said checks first: the parent's note may still
 * be queued, and the child inherits those.) */
bool gt_note_queued(const char *component)
{
    bool found = false;
    pthread_mutex_lock(&mu);
    for (struct gt_note_rec *n = head; n && !found; n = n->next)
        found = !strcmp(n->component, component);
    pthread_mutex_unlock(&mu);
    return found;
}

struct gt_note_rec *gt_notes_take(void)
{
    pthread_mutex_lock(&mu);
    struct gt_note_rec *all = head;
    head = NULL;
    tail = &head;
    atomic_store(&count, 0);
    pthread_mutex_unlock(&mu);
    return all;
}

/* Fork child: notes not yet written stay (the child inherits the situation
 * they describe: the clock, NVTX, Python, CUPTI off or unavailable), except
 * CUPTI's and the kernel sampling's where CUPTI ran in the parent: the child
 * has no CUPTI of its own and says so itself (a child
 * forked within ms of its parent's start had the parent's "kernels sampled"
 * and "cupti on" notes in its trace, and every report on it began with a
 * kernel-sampling line; a helper's probe). The lock may have been held by a
 * vanished thread. */
void gt_notes_after_fork_child(bool cupti_ran)
{
    pthread_mutex_init(&mu, NULL);
    int kept = 0;
    tail = &head;
    for (struct gt_note_rec *n = head, *next; n; n = next) {
        next = n->next;
        if (cupti_ran && (!strcmp(n->component, "cupti") || !strcmp(n->component, "kernels"))) {
            free(n);
            continue;
        }
        *tail = n;
        tail = &n->next;
        kept++;
    }
    *tail = NULL;
    atomic_store(&count, kept);
}
