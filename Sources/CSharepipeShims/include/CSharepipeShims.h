#ifndef CSHAREPIPE_SHIMS_H
#define CSHAREPIPE_SHIMS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/random.h>

/// copy_file_range(2) between the current offsets of two descriptors.
ssize_t sharepipe_copy_file_range(int fd_in, int fd_out, size_t length);

/// sync_file_range(2) with SYNC_FILE_RANGE_WRITE: starts writeback of a range without waiting for it.
int sharepipe_start_writeback(int fd, int64_t offset, int64_t length);

/// fsetxattr(2), fgetxattr(2) and fremovexattr(2), which Glibc's Swift module does not expose.
int sharepipe_fsetxattr(int fd, const char *name, const void *value, size_t size);
ssize_t sharepipe_fgetxattr(int fd, const char *name, void *value, size_t size);
int sharepipe_fremovexattr(int fd, const char *name);

/// renameat2(2) with RENAME_NOREPLACE: fails with EEXIST instead of replacing.
int sharepipe_renameat_noreplace(int old_dirfd, const char *old_path, int new_dirfd, const char *new_path);

/// inotify_init1(IN_CLOEXEC), or IN_CLOEXEC|IN_NONBLOCK when nonblocking is non-zero.
int sharepipe_inotify_init(int nonblocking);

/// One event of an inotify read buffer.
typedef struct {
    int32_t wd;
    uint32_t mask;
    uint32_t cookie;
    const char *name; /* NULL when the event carries no name */
} sharepipe_inotify_event;

/// Walks an inotify read buffer: fills `event` from `buffer + *offset`, advances `*offset`,
/// returns 1, or 0 at the end of the buffer.
int sharepipe_inotify_next(const char *buffer, size_t length, size_t *offset, sharepipe_inotify_event *event);

/// Sends one datagram to a systemd NOTIFY_SOCKET (a path, or an abstract name starting with '@').
/// Returns 0, or -1 with errno set.
int sharepipe_notify_send(const char *socket_path, const char *message, size_t length);

/// Starts `/bin/sh -c command` in a new process group with default signal dispositions and an
/// empty signal mask. stdin is /dev/null; stdout and stderr go to `output_fd` (or are inherited
/// when it is negative). Returns 0 and sets *pid, or an errno value.
int sharepipe_spawn_shell(const char *command, char *const envp[], int output_fd, pid_t *pid);

/// syncfs(2): commits every dirty file and directory of the file system holding `fd`.
int sharepipe_syncfs(int fd);

/// flock(2) (its name collides with `struct flock` in Swift).
int sharepipe_flock(int fd, int operation);

/// statvfs(2): bytes available to unprivileged users. Returns 0, or -1 with errno set.
int sharepipe_available_bytes(const char *path, uint64_t *bytes);

/// fstatfs(2) reduced to what the capability probe needs: the type magic (f_type) and the total size in bytes
/// (f_blocks times the fragment size; 0 when the file system reports none). Returns 0, or -1 with errno set.
int sharepipe_filesystem_type(int fd, uint64_t *type, uint64_t *total_bytes);

/// statx(2) with STATX_DIOALIGN: the alignment direct I/O asks of memory buffers and of file offsets and lengths
/// for the file open as `fd`; both 0 when its file system offers no direct I/O (or the kernel, before 6.1, cannot
/// tell). Returns 0, or -1 with errno set.
int sharepipe_direct_io_alignment(int fd, uint32_t *memory, uint32_t *offset);

/// Whether O_DIRECT is set on the open file description of `fd`: 1 or 0, or -1 with errno set.
int sharepipe_direct_io(int fd);

/// Sets (on != 0) or clears O_DIRECT on the open file description of `fd` (fcntl F_SETFL). Returns 0, or -1 with
/// errno set.
int sharepipe_set_direct_io(int fd, int on);

#endif
