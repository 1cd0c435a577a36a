#define _GNU_SOURCE
#include "CSharepipeShims.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/statvfs.h>
#include <sys/vfs.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/xattr.h>
#include <unistd.h>

ssize_t sharepipe_copy_file_range(int fd_in, int fd_out, size_t length) {
    return copy_file_range(fd_in, NULL, fd_out, NULL, length, 0);
}

int sharepipe_start_writeback(int fd, int64_t offset, int64_t length) {
    return sync_file_range(fd, offset, length, SYNC_FILE_RANGE_WRITE);
}

int sharepipe_fsetxattr(int fd, const char *name, const void *value, size_t size) {
    return fsetxattr(fd, name, value, size, 0);
}

ssize_t sharepipe_fgetxattr(int fd, const char *name, void *value, size_t size) {
    return fgetxattr(fd, name, value, size);
}

int sharepipe_fremovexattr(int fd, const char *name) {
    return fremovexattr(fd, name);
}

int sharepipe_renameat_noreplace(int old_dirfd, const char *old_path, int new_dirfd, const char *new_path) {
    return renameat2(old_dirfd, old_path, new_dirfd, new_path, RENAME_NOREPLACE);
}

int sharepipe_inotify_init(int nonblocking) {
    return inotify_init1(IN_CLOEXEC | (nonblocking ? IN_NONBLOCK : 0));
}

int sharepipe_inotify_next(const char *buffer, size_t length, size_t *offset, sharepipe_inotify_event *event) {
    if (*offset + sizeof(struct inotify_event) > length) {
        return 0;
    }
    struct inotify_event raw;
    memcpy(&raw, buffer + *offset, sizeof raw);
    event->wd = raw.wd;
    event->mask = raw.mask;
    event->cookie = raw.cookie;
    event->name = raw.len > 0 ? buffer + *offset + sizeof(struct inotify_event) : NULL;
    *offset += sizeof(struct inotify_event) + raw.len;
    return 1;
}

int sharepipe_notify_send(const char *socket_path, const char *message, size_t length) {
    struct sockaddr_un address;
    memset(&address, 0, sizeof address);
    address.sun_family = AF_UNIX;
    size_t path_length = strlen(socket_path);
    if (path_length == 0 || path_length >= sizeof address.sun_path) {
        errno = EINVAL;
        return -1;
    }
    memcpy(address.sun_path, socket_path, path_length);
    if (socket_path[0] == '@') {
        address.sun_path[0] = '\0';
    }
    socklen_t address_length = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + path_length);
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return -1;
    }
    ssize_t sent;
    do {
        sent = sendto(fd, message, length, MSG_NOSIGNAL, (struct sockaddr *)&address, address_length);
    } while (sent < 0 && errno == EINTR);
    int saved = errno;
    close(fd);
    errno = saved;
    return sent < 0 ? -1 : 0;
}

int sharepipe_spawn_shell(const char *command, char *const envp[], int output_fd, pid_t *pid) {
    posix_spawnattr_t attributes;
    posix_spawn_file_actions_t actions;
    int result = posix_spawnattr_init(&attributes);
    if (result != 0) {
        return result;
    }
    result = posix_spawn_file_actions_init(&actions);
    if (result != 0) {
        posix_spawnattr_destroy(&attributes);
        return result;
    }
    sigset_t empty, all;
    sigemptyset(&empty);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&attributes, &empty);
    posix_spawnattr_setsigdefault(&attributes, &all);
    posix_spawnattr_setpgroup(&attributes, 0);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    if (output_fd >= 0) {
        posix_spawn_file_actions_adddup2(&actions, output_fd, 1);
        posix_spawn_file_actions_adddup2(&actions, output_fd, 2);
    }
    char *const argv[] = {"/bin/sh", "-c", (char *)command, NULL};
    result = posix_spawn(pid, "/bin/sh", &actions, &attributes, argv, envp);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    return result;
}

int sharepipe_flock(int fd, int operation) {
    return flock(fd, operation);
}

int sharepipe_available_bytes(const char *path, uint64_t *bytes) {
    struct statvfs info;
    if (statvfs(path, &info) != 0) {
        return -1;
    }
    *bytes = (uint64_t)info.f_bavail * (uint64_t)info.f_frsize;
    return 0;
}

int sharepipe_syncfs(int fd) {
    return syncfs(fd);
}

int sharepipe_filesystem_type(int fd, uint64_t *type, uint64_t *total_bytes) {
    struct statfs info;
    if (fstatfs(fd, &info) != 0) {
        return -1;
    }
    *type = (uint64_t)info.f_type;
    *total_bytes = (uint64_t)info.f_blocks * (uint64_t)(info.f_frsize > 0 ? info.f_frsize : info.f_bsize);
    return 0;
}

int sharepipe_direct_io_alignment(int fd, uint32_t *memory, uint32_t *offset) {
    struct statx info;
    memset(&info, 0, sizeof info);
    if (syscall(SYS_statx, fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &info) != 0) {
        return -1;
    }
    if ((info.stx_mask & STATX_DIOALIGN) == 0) {
        *memory = 0;
        *offset = 0;
        return 0;
    }
    *memory = info.stx_dio_mem_align;
    *offset = info.stx_dio_offset_align;
    return 0;
}

int sharepipe_direct_io(int fd) {
    int flags = fcntl(fd, F_GETFL);
    return flags < 0 ? -1 : (flags & O_DIRECT) != 0;
}

int sharepipe_set_direct_io(int fd, int on) {
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0) {
        return -1;
    }
    int wanted = on ? (flags | O_DIRECT) : (flags & ~O_DIRECT);
    return wanted == flags ? 0 : fcntl(fd, F_SETFL, wanted);
}
