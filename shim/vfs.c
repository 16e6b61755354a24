/* vfs.c - the SQLite VFS the trace is written through: the system's default
 * VFS ("unix") with one check added. A program may close any descriptor
 * (daemons, closefrom(), some launchers) and open its own files, which then
 * get the numbers SQLite still holds: SQLite would write the trace into the
 * program's files. So when SQLite opens a file we remember which descriptor
 * it stored and the file's device and inode, and before every read, write,
 * truncate, sync, size and lock we check that the descriptor still names that file. If
 * not, the call fails (SQLITE_IOERR): nothing of the program's is touched,
 * the writer's failure policy stops tracing and says so once.
 *
 * The default VFS keeps its descriptor in its own file structure, whose
 * layout is SQLite's business: we find it by looking, right after the open,
 * for an int in that structure that is a descriptor of exactly the file just
 * opened. A file where none is found is written unchecked (and said once). */
#include <fcntl.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vfs.h"

struct vfile {
    sqlite3_file base;       /* pMethods: ours */
    sqlite3_file *real;      /* the default VFS's file, right after this struct */
    int fd;                  /* -1: not found, unchecked */
    dev_t dev;
    ino_t ino;
    const char *name;        /* SQLite's, valid until the close */
    int shm_fd;              /* the -shm's descriptor (the VFS's own), found at the first map; -1 not yet, -2 none */
    dev_t shm_dev;
    ino_t shm_ino;
};

static sqlite3_vfs *real_vfs;
static sqlite3_vfs our_vfs;
static sqlite3_io_methods our_methods;
static const sqlite3_io_methods *real_methods;   /* the default VFS's, taken at the first open */
static _Atomic int lost;                          /* a descriptor no longer named its file */
static _Atomic int swapped;                       /* a name led to another file than ours */
static struct { bool set; dev_t dev; ino_t ino; } expected;   /* the main file the shim created */

void gt_vfs_expect(dev_t dev, ino_t ino)
{
    expected.set = true;
    expected.dev = dev;
    expected.ino = ino;
}

bool gt_vfs_file_swapped(void)
{
    return atomic_load(&swapped) != 0;
}

#define REAL(f) (((struct vfile *)(f))->real)

static bool still_ours(sqlite3_file *f)
{
    struct vfile *v = (struct vfile *)f;
    struct stat st;
    if (v->fd < 0)
        return true;
    if (fstat(v->fd, &st) == 0 && st.st_dev == v->dev && st.st_ino == v->ino)
        return true;
    atomic_store(&lost, 1);
    return false;
}

bool gt_vfs_file_lost(void)
{
    return atomic_load(&lost) != 0;
}

/* The descriptor the default VFS stored for the file path: an int among the
 * first bytes of its structure that is an open descriptor of that file. */
static int find_fd(sqlite3_file *real, int size, const char *path)
{
    struct stat want, got;
    if (!path || stat(path, &want) != 0)
        return -1;
    for (int off = 0; off + (int)sizeof(int) <= size && off < 256; off += (int)sizeof(int)) {
        int fd;
        memcpy(&fd, (char *)real + off, sizeof fd);
        if (fd > 2 && fcntl(fd, F_GETFD) >= 0 && fstat(fd, &got) == 0 && got.st_dev == want.st_dev &&
            got.st_ino == want.st_ino)
            return fd;
    }
    return -1;
}

/* A file whose descriptor the program took is abandoned: its close would
 * close the program's descriptor. What SQLite's file held (its shared-memory
 * link, a spare descriptor record) is kept reachable here, a deliberate
 * leak of a few hundred bytes, once a process at most a file. */
#define ABANDONED_MAX 8
static char abandoned[ABANDONED_MAX][1024];
static _Atomic int nabandoned;

static void abandon(sqlite3_file *f)
{
    int k = atomic_fetch_add(&nabandoned, 1);
    if (k < ABANDONED_MAX)
        memcpy(abandoned[k], REAL(f), real_vfs->szOsFile < 1024 ? (size_t)real_vfs->szOsFile : 1024);
}

static int v_close(sqlite3_file *f)
{
    if (!REAL(f)->pMethods)
        return SQLITE_OK;
    if (!still_ours(f)) {   /* the program's descriptor now: not closed */
        abandon(f);
        return SQLITE_OK;
    }
    return REAL(f)->pMethods->xClose(REAL(f));
}
static int v_read(sqlite3_file *f, void *b, int n, sqlite3_int64 o)
{
    return still_ours(f) ? REAL(f)->pMethods->xRead(REAL(f), b, n, o) : SQLITE_IOERR_READ;
}
static int v_write(sqlite3_file *f, const void *b, int n, sqlite3_int64 o)
{
    return still_ours(f) ? REAL(f)->pMethods->xWrite(REAL(f), b, n, o) : SQLITE_IOERR_WRITE;
}
static int v_truncate(sqlite3_file *f, sqlite3_int64 size)
{
    return still_ours(f) ? REAL(f)->pMethods->xTruncate(REAL(f), size) : SQLITE_IOERR_TRUNCATE;
}
static int v_sync(sqlite3_file *f, int flags)
{
    return still_ours(f) ? REAL(f)->pMethods->xSync(REAL(f), flags) : SQLITE_IOERR_FSYNC;
}
static int v_size(sqlite3_file *f, sqlite3_int64 *s)
{
    return still_ours(f) ? REAL(f)->pMethods->xFileSize(REAL(f), s) : SQLITE_IOERR_FSTAT;
}
static int v_lock(sqlite3_file *f, int l)
{
    return still_ours(f) ? REAL(f)->pMethods->xLock(REAL(f), l) : SQLITE_IOERR_LOCK;
}
static int v_unlock(sqlite3_file *f, int l) { return REAL(f)->pMethods->xUnlock(REAL(f), l); }
static int v_check(sqlite3_file *f, int *r) { return REAL(f)->pMethods->xCheckReservedLock(REAL(f), r); }
static int v_fcntl(sqlite3_file *f, int op, void *a) { return REAL(f)->pMethods->xFileControl(REAL(f), op, a); }
static int v_sector(sqlite3_file *f) { return REAL(f)->pMethods->xSectorSize(REAL(f)); }
static int v_caps(sqlite3_file *f) { return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f)); }
/* The -shm's descriptor is the VFS's own, opened at the first map: found
 * then by its inode among ours (above 300, vfs's open) and checked before
 * every lock, unlock, map and unmap like the database's, so that SQLite's
 * locks never land on a program's file put on its number (a review's probe:
 * the trace's locks on bytes of the program's mine.dat; an unlock there
 * would drop the program's own, the close close its descriptor). */
static void find_shm(struct vfile *v)
{
    char path[4200];
    struct stat want, got;
    v->shm_fd = -2;
    if (!v->name || (size_t)snprintf(path, sizeof path, "%s-shm", v->name) >= sizeof path || stat(path, &want) != 0)
        return;
    for (int fd = 3; fd < 4096; fd++)
        if (fstat(fd, &got) == 0 && got.st_dev == want.st_dev && got.st_ino == want.st_ino) {
            v->shm_fd = fd;
            v->shm_dev = got.st_dev;
            v->shm_ino = got.st_ino;
            return;
        }
}

static bool shm_ours(sqlite3_file *f)
{
    struct vfile *v = (struct vfile *)f;
    if (!still_ours(f))
        return false;
    if (v->shm_fd < 0)
        return true;
    struct stat st;
    if (fstat(v->shm_fd, &st) == 0 && st.st_dev == v->shm_dev && st.st_ino == v->shm_ino)
        return true;
    atomic_store(&lost, 1);
    return false;
}

static int v_shmmap(sqlite3_file *f, int i, int sz, int ext, void volatile **p)
{
    struct vfile *v = (struct vfile *)f;
    if (!shm_ours(f))
        return SQLITE_IOERR_SHMMAP;
    int rc = REAL(f)->pMethods->xShmMap(REAL(f), i, sz, ext, p);
    if (rc == SQLITE_OK && v->shm_fd == -1)
        find_shm(v);
    return rc;
}
static int v_shmlock(sqlite3_file *f, int off, int n, int flags)
{
    if (!shm_ours(f))
        return flags & SQLITE_SHM_UNLOCK ? SQLITE_OK : SQLITE_IOERR_SHMLOCK;   /* nothing of ours to unlock there */
    return REAL(f)->pMethods->xShmLock(REAL(f), off, n, flags);
}
static void v_shmbarrier(sqlite3_file *f) { REAL(f)->pMethods->xShmBarrier(REAL(f)); }
static int v_shmunmap(sqlite3_file *f, int del)
{
    /* not ours any more: its close would close the program's descriptor */
    if (shm_ours(f))
        return REAL(f)->pMethods->xShmUnmap(REAL(f), del);
    abandon(f);   /* (its shared-memory link stays reachable) */
    return SQLITE_OK;
}
static int v_fetch(sqlite3_file *f, sqlite3_int64 o, int n, void **p) { return REAL(f)->pMethods->xFetch(REAL(f), o, n, p); }
static int v_unfetch(sqlite3_file *f, sqlite3_int64 o, void *p) { return REAL(f)->pMethods->xUnfetch(REAL(f), o, p); }

static int v_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags, int *out_flags)
{
    (void)vfs;
    struct vfile *v = (struct vfile *)f;
    memset(v, 0, sizeof *v);
    v->real = (sqlite3_file *)(v + 1);
    v->fd = -1;
    v->shm_fd = -1;
    v->name = name;
    int rc = real_vfs->xOpen(real_vfs, name, v->real, flags, out_flags);
    if (rc != SQLITE_OK || !v->real->pMethods)
        return rc;   /* base.pMethods stays NULL: SQLite calls no method of a file that did not open */
    if (!real_methods) {
        real_methods = v->real->pMethods;
        our_methods = (sqlite3_io_methods){
            .iVersion = real_methods->iVersion < 3 ? real_methods->iVersion : 3,
            .xClose = v_close, .xRead = v_read, .xWrite = v_write, .xTruncate = v_truncate, .xSync = v_sync,
            .xFileSize = v_size, .xLock = v_lock, .xUnlock = v_unlock, .xCheckReservedLock = v_check,
            .xFileControl = v_fcntl, .xSectorSize = v_sector, .xDeviceCharacteristics = v_caps,
            .xShmMap = v_shmmap, .xShmLock = v_shmlock, .xShmBarrier = v_shmbarrier, .xShmUnmap = v_shmunmap,
            .xFetch = v_fetch, .xUnfetch = v_unfetch,
        };
    }
    v->fd = find_fd(v->real, real_vfs->szOsFile, name);
    if (v->fd >= 0) {
        struct stat st;
        fstat(v->fd, &st);
        v->dev = st.st_dev;
        v->ino = st.st_ino;
    }
    /* Between the shim's exclusive create and this open, a rename could have
     * put a symbolic link or another file at the name: the main file must be
     * the inode the shim created, and a -wal or -journal must be a file at its
     * own name, not one reached through a link. */
    struct stat at_name;
    bool bad = false;
    if (flags & SQLITE_OPEN_MAIN_DB)
        bad = expected.set && (v->fd < 0 || v->dev != expected.dev || v->ino != expected.ino);
    else if (flags & (SQLITE_OPEN_WAL | SQLITE_OPEN_MAIN_JOURNAL))
        bad = v->fd < 0 || !name || lstat(name, &at_name) != 0 || !S_ISREG(at_name.st_mode) ||
              at_name.st_dev != v->dev || at_name.st_ino != v->ino;
    if (bad) {
        atomic_store(&swapped, 1);
        v->real->pMethods->xClose(v->real);
        return SQLITE_CANTOPEN;
    }
    v->base.pMethods = &our_methods;
    return SQLITE_OK;
}

#if GT_SQLITE_PRIVATE
/* SQLite's open for its files: never on fd 0, 1 or 2. SQLite itself refuses
 * those, closes the file and puts /dev/null there for good: a program
 * started with >&- then got fd 4 for the file it opened, and its printf
 * went nowhere (a helper's probe). Moved up at once instead, 0-2 left free. */
/* And off the low numbers a program's closefrom(3) hands to its own files:
 * the file is checked before each write (still_ours), but between the check
 * and the write the program could close it and open its own file on that
 * number (a helper's probe, 1 run in 75: 1.5 MB of WAL written into the
 * program's file). Above 300 (with a descriptor limit of 512 or more; past
 * libunwind's pipe at 256, fdlift.c), a program's reuse does not reach. */
static int high_mark(void)
{
    struct rlimit rl;
    return getrlimit(RLIMIT_NOFILE, &rl) == 0 && (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= 512) ? 300 : 3;
}

static int open_above_stdio(const char *path, int flags, int mode)
{
    int fd = open(path, flags, mode);
    if (fd >= 0 && fd < 300) {
        int up = fcntl(fd, (flags & O_CLOEXEC) ? F_DUPFD_CLOEXEC : F_DUPFD, high_mark());
        if (up < 0 && fd <= 2)
            up = fcntl(fd, (flags & O_CLOEXEC) ? F_DUPFD_CLOEXEC : F_DUPFD, 3);
        if (up >= 0) {
            close(fd);
            fd = up;
        } else if (fd <= 2) {
            close(fd);
            fd = -1;
        }
    }
    return fd;
}
#endif

static bool stdio_free;   /* open_above_stdio is SQLite's open */

bool gt_vfs_keeps_stdio_free(void)
{
    return stdio_free;
}

/* Registers the VFS (not as the default: SQLite in this process is ours
 * alone, but say which VFS at each open anyway). Idempotent. */
const char *gt_vfs_name(void)
{
    if (!real_vfs) {
#if GT_SQLITE_PRIVATE
        /* Our own copy of SQLite (linked in, symbols hidden): no program shares
         * its settings. Without the memory statistics no allocation takes its
         * global mutex: four per event written. Before the first call, which
         * initialises SQLite (later it is refused, harmlessly). */
        sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
#endif
        real_vfs = sqlite3_vfs_find(NULL);
        if (!real_vfs)
            return NULL;
#if GT_SQLITE_PRIVATE
        /* (a system SQLite may be the program's too: its calls are left alone) */
        stdio_free = real_vfs->iVersion >= 3 && real_vfs->xSetSystemCall &&
                     real_vfs->xSetSystemCall(real_vfs, "open", (sqlite3_syscall_ptr)open_above_stdio) == SQLITE_OK;
#endif
        our_vfs = *real_vfs;
        our_vfs.zName = "gputrace";
        our_vfs.szOsFile = (int)sizeof(struct vfile) + real_vfs->szOsFile;
        our_vfs.xOpen = v_open;
        our_vfs.pNext = NULL;
        if (sqlite3_vfs_register(&our_vfs, 0) != SQLITE_OK)
            return NULL;
    }
    return our_vfs.zName;
}
