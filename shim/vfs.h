/* vfs.h - the SQLite VFS the writer opens the trace through: the default one,
 * with every write checked to still reach the trace's own file (vfs.c). */
#ifndef GPUTRACE_VFS_H
#define GPUTRACE_VFS_H
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/types.h>

/* Registers the VFS once; its name for sqlite3_open_v2, or NULL (then the default). */
const char *gt_vfs_name(void);
/* SQLite's files never take fd 0-2 (its open is ours: a private SQLite only) */
bool gt_vfs_keeps_stdio_free(void);
/* A descriptor SQLite held no longer named the trace's file (the program closed
 * it and the number was reused): writes were refused. */
bool gt_vfs_file_lost(void);
/* The main file SQLite opens must be this one (the inode the shim created). */
void gt_vfs_expect(dev_t dev, ino_t ino);
/* A name led to another file than the one created (a link or file put there
 * between the create and the open): SQLite's open was refused. */
bool gt_vfs_file_swapped(void);

#endif
