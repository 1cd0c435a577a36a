/*
 * powercutfs: a FUSE file system for sharepipe's power-cut tests.
 *
 *     powercutfs BACKING MOUNTPOINT [FUSE options]      (runs in the foreground)
 *
 * Everything passes through to the directory BACKING, except file data: what is written to a file stays in this
 * process's memory until that file is fsynced (fsync or fdatasync), and only then reaches BACKING (written and
 * fsynced there). Killing the process (SIGKILL) is the power cut: every unsynced write is gone, and a new
 * instance mounted on the same BACKING serves what reached the disk. A file created but never synced comes back
 * empty; one rewritten but not synced comes back as it was last synced.
 *
 * Unsynced data is keyed by the backing file's inode number, and ext4 hands a freed number to the next file it
 * creates, so the data must never outlive the file: when a call removes a file's last name, whatever of it is
 * unsynced is written back to the (now nameless) backing file, not synced — a nameless file is gone after a power
 * cut anyway, and descriptors still open on it keep reading what they wrote — and forgotten; writes to a file that
 * has no name any more (SQLite's -shm, written back from its mapping after SQLite unlinked it) go straight to the
 * backing file. The removal and that check hold the data lock, so no write can slip in between them.
 *
 * How faithful: data only. Directory operations (create, mkdir, rename, link, unlink, rmdir) reach BACKING at once,
 * as on a file system whose metadata journal commits before the call returns; a missing directory fsync is not
 * caught, a missing file fsync is.
 *
 * Like most FUSE file systems (and Linux's NFS client) it refuses rename flags (RENAME_NOREPLACE: EINVAL), and
 * like many it reports no capacity (statfs: 0 blocks). Locks are left to the kernel (local flock and POSIX locks).
 */
#define FUSE_USE_VERSION 31
#define _GNU_SOURCE

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <unistd.h>

/* The unsynced contents of one file, by the backing file's inode: the whole file as the writers see it. */
struct dirty {
    ino_t ino;
    unsigned char *data;
    size_t size;
    size_t capacity;
    struct dirty *next;
};

static int backing = -1;
static struct dirty *dirty_files = NULL;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* "/a/b" -> "a/b", "/" -> "." */
static const char *relative(const char *path) {
    while (*path == '/') {
        path++;
    }
    return *path ? path : ".";
}

static struct dirty *find_dirty(ino_t ino) {
    for (struct dirty *entry = dirty_files; entry; entry = entry->next) {
        if (entry->ino == ino) {
            return entry;
        }
    }
    return NULL;
}

static void drop_dirty(ino_t ino) {
    for (struct dirty **link = &dirty_files; *link; link = &(*link)->next) {
        if ((*link)->ino == ino) {
            struct dirty *gone = *link;
            *link = gone->next;
            free(gone->data);
            free(gone);
            return;
        }
    }
}

static int reserve(struct dirty *entry, size_t size) {
    if (size <= entry->capacity) {
        return 0;
    }
    size_t capacity = entry->capacity ? entry->capacity : 4096;
    while (capacity < size) {
        capacity *= 2;
    }
    unsigned char *data = realloc(entry->data, capacity);
    if (!data) {
        return -ENOMEM;
    }
    memset(data + entry->capacity, 0, capacity - entry->capacity);
    entry->data = data;
    entry->capacity = capacity;
    return 0;
}

/* The unsynced data of the file open as fd (NULL: it has none), with the lock taken; on an error, the lock is not
 * taken. */
static int lock_dirty_of(int fd, struct dirty **entry) {
    struct stat status;
    if (fstat(fd, &status) != 0) {
        return -errno;
    }
    pthread_mutex_lock(&lock);
    *entry = find_dirty(status.st_ino);
    return 0;
}

/* The dirty entry of the file open as fd, loaded from the backing file on first use; NULL for a file without a name
 * (its data goes straight to the backing file). Called with the lock held. */
static int load_dirty(int fd, struct dirty **result) {
    struct stat status;
    if (fstat(fd, &status) != 0) {
        return -errno;
    }
    struct dirty *entry = find_dirty(status.st_ino);
    if (!entry && status.st_nlink == 0) {
        *result = NULL;
        return 0;
    }
    if (!entry) {
        entry = calloc(1, sizeof *entry);
        if (!entry) {
            return -ENOMEM;
        }
        entry->ino = status.st_ino;
        int error = reserve(entry, (size_t)status.st_size);
        size_t done = 0;
        while (error == 0 && done < (size_t)status.st_size) {
            ssize_t count = pread(fd, entry->data + done, (size_t)status.st_size - done, (off_t)done);
            if (count < 0) {
                error = -errno;
            } else if (count == 0) {
                break;
            } else {
                done += (size_t)count;
            }
        }
        if (error != 0) {
            free(entry->data);
            free(entry);
            return error;
        }
        entry->size = done;
        entry->next = dirty_files;
        dirty_files = entry;
    }
    *result = entry;
    return 0;
}

/* Writes a file's whole unsynced contents to its backing file (not synced). Called with the lock held. */
static int write_back(int fd, const struct dirty *entry) {
    size_t done = 0;
    while (done < entry->size) {
        ssize_t count = pwrite(fd, entry->data + done, entry->size - done, (off_t)done);
        if (count < 0) {
            return -errno;
        }
        done += (size_t)count;
    }
    return ftruncate(fd, (off_t)entry->size) == 0 ? 0 : -errno;
}

/* The regular file at path, opened on the backing side before a call that may remove its last name; -1 for anything
 * else (nothing there, a directory, a symlink, a device: none of those has unsynced data). */
static int open_if_regular(const char *path) {
    struct stat status;
    if (fstatat(backing, path, &status, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(status.st_mode)) {
        return -1;
    }
    int fd = openat(backing, path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    /* A file the server may not write still gets its data forgotten: an O_PATH descriptor can be fstat'ed. */
    return fd >= 0 ? fd : openat(backing, path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
}

/* After a call that may have removed the last name of the file open as fd (from open_if_regular; -1: none): if it
 * did, the file's unsynced data is written back and forgotten. Closes fd. Called with the lock held, the same hold
 * as the removal. */
static void forget_if_nameless(int fd) {
    if (fd < 0) {
        return;
    }
    struct stat status;
    struct dirty *entry = fstat(fd, &status) == 0 && status.st_nlink == 0 ? find_dirty(status.st_ino) : NULL;
    if (entry) {
        /* Fails only for a file the server cannot write (an O_PATH descriptor): its open descriptors then read
         * what was last written back. */
        (void)write_back(fd, entry);
        drop_dirty(status.st_ino);
    }
    close(fd);
}

static void apply_dirty_size(struct stat *status) {
    pthread_mutex_lock(&lock);
    struct dirty *entry = S_ISREG(status->st_mode) ? find_dirty(status->st_ino) : NULL;
    if (entry) {
        status->st_size = (off_t)entry->size;
        status->st_blocks = (blkcnt_t)((entry->size + 511) / 512);
    }
    pthread_mutex_unlock(&lock);
}

static void *pc_init(struct fuse_conn_info *connection, struct fuse_config *config) {
    (void)connection;
    config->use_ino = 1;
    /* Unlinking an open file removes it, instead of renaming it to .fuse_hidden*: the spool's directories must
     * empty for rmdir. */
    config->hard_remove = 1;
    return NULL;
}

static int pc_getattr(const char *path, struct stat *status, struct fuse_file_info *file) {
    int result = file ? fstat((int)file->fh, status) : fstatat(backing, relative(path), status, AT_SYMLINK_NOFOLLOW);
    if (result != 0) {
        return -errno;
    }
    apply_dirty_size(status);
    return 0;
}

static int pc_access(const char *path, int mask) {
    return faccessat(backing, relative(path), mask, 0) == 0 ? 0 : -errno;
}

static int pc_readlink(const char *path, char *buffer, size_t size) {
    ssize_t count = readlinkat(backing, relative(path), buffer, size - 1);
    if (count < 0) {
        return -errno;
    }
    buffer[count] = '\0';
    return 0;
}

static int pc_readdir(const char *path, void *buffer, fuse_fill_dir_t fill, off_t offset, struct fuse_file_info *file,
                      enum fuse_readdir_flags flags) {
    (void)offset;
    (void)file;
    (void)flags;
    int fd = openat(backing, relative(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        return -errno;
    }
    DIR *directory = fdopendir(fd);
    if (!directory) {
        int error = errno;
        close(fd);
        return -error;
    }
    struct dirent *entry;
    while ((entry = readdir(directory)) != NULL) {
        struct stat status;
        memset(&status, 0, sizeof status);
        status.st_ino = entry->d_ino;
        status.st_mode = (mode_t)(DTTOIF(entry->d_type));
        if (fill(buffer, entry->d_name, &status, 0, 0)) {
            break;
        }
    }
    closedir(directory);
    return 0;
}

static int pc_mkdir(const char *path, mode_t mode) {
    return mkdirat(backing, relative(path), mode) == 0 ? 0 : -errno;
}

static int pc_unlink(const char *path) {
    int fd = open_if_regular(relative(path));
    pthread_mutex_lock(&lock);
    int result = unlinkat(backing, relative(path), 0) == 0 ? 0 : -errno;
    forget_if_nameless(fd);
    pthread_mutex_unlock(&lock);
    return result;
}

static int pc_rmdir(const char *path) {
    return unlinkat(backing, relative(path), AT_REMOVEDIR) == 0 ? 0 : -errno;
}

static int pc_symlink(const char *target, const char *path) {
    return symlinkat(target, backing, relative(path)) == 0 ? 0 : -errno;
}

static int pc_rename(const char *from, const char *to, unsigned int flags) {
    if (flags != 0) {
        return -EINVAL;
    }
    int replaced = open_if_regular(relative(to));
    pthread_mutex_lock(&lock);
    int result = renameat(backing, relative(from), backing, relative(to)) == 0 ? 0 : -errno;
    forget_if_nameless(replaced);
    pthread_mutex_unlock(&lock);
    return result;
}

static int pc_link(const char *from, const char *to) {
    return linkat(backing, relative(from), backing, relative(to), 0) == 0 ? 0 : -errno;
}

static int pc_chmod(const char *path, mode_t mode, struct fuse_file_info *file) {
    int result = file ? fchmod((int)file->fh, mode) : fchmodat(backing, relative(path), mode, 0);
    return result == 0 ? 0 : -errno;
}

static int pc_chown(const char *path, uid_t user, gid_t group, struct fuse_file_info *file) {
    int result = file ? fchown((int)file->fh, user, group)
                      : fchownat(backing, relative(path), user, group, AT_SYMLINK_NOFOLLOW);
    return result == 0 ? 0 : -errno;
}

/* A truncation is a change of data: it stays in memory until the file is synced, like a write. */
static int truncate_fd(int fd, off_t size) {
    pthread_mutex_lock(&lock);
    struct dirty *entry;
    int error = load_dirty(fd, &entry);
    if (error == 0 && !entry) {
        error = ftruncate(fd, size) == 0 ? 0 : -errno;
        pthread_mutex_unlock(&lock);
        return error;
    }
    if (error == 0) {
        error = reserve(entry, (size_t)size);
    }
    if (error == 0) {
        if ((size_t)size > entry->size) {
            memset(entry->data + entry->size, 0, (size_t)size - entry->size);
        }
        entry->size = (size_t)size;
    }
    pthread_mutex_unlock(&lock);
    return error;
}

static int pc_truncate(const char *path, off_t size, struct fuse_file_info *file) {
    if (file) {
        return truncate_fd((int)file->fh, size);
    }
    int fd = openat(backing, relative(path), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        return -errno;
    }
    int error = truncate_fd(fd, size);
    close(fd);
    return error;
}

static int pc_utimens(const char *path, const struct timespec times[2], struct fuse_file_info *file) {
    int result = file ? futimens((int)file->fh, times) : utimensat(backing, relative(path), times, AT_SYMLINK_NOFOLLOW);
    return result == 0 ? 0 : -errno;
}

/* Files are opened read-write on the backing side whatever the caller asked for: fsync writes the dirty data back
 * through the same descriptor. O_TRUNC becomes an in-memory truncation, O_APPEND is applied by the kernel. */
static int open_backing(const char *path, int flags, mode_t mode, struct fuse_file_info *file) {
    int backing_flags = (flags & ~(O_TRUNC | O_APPEND | O_ACCMODE | O_WRONLY)) | O_RDWR | O_CLOEXEC;
    int fd = openat(backing, relative(path), backing_flags, mode);
    if (fd < 0 && errno == EACCES) {
        fd = openat(backing, relative(path), (backing_flags & ~O_RDWR) | O_RDONLY, mode);
    }
    if (fd < 0) {
        return -errno;
    }
    if (flags & O_TRUNC) {
        int error = truncate_fd(fd, 0);
        if (error != 0) {
            close(fd);
            return error;
        }
    }
    file->fh = (uint64_t)fd;
    return 0;
}

static int pc_open(const char *path, struct fuse_file_info *file) {
    return open_backing(path, file->flags & ~O_CREAT, 0, file);
}

static int pc_create(const char *path, mode_t mode, struct fuse_file_info *file) {
    return open_backing(path, file->flags | O_CREAT, mode, file);
}

static int pc_read(const char *path, char *buffer, size_t size, off_t offset, struct fuse_file_info *file) {
    (void)path;
    int fd = (int)file->fh;
    struct dirty *entry;
    int error = lock_dirty_of(fd, &entry);
    if (error != 0) {
        return error;
    }
    if (entry) {
        size_t count = (size_t)offset >= entry->size ? 0 : entry->size - (size_t)offset;
        if (count > size) {
            count = size;
        }
        memcpy(buffer, entry->data + offset, count);
        pthread_mutex_unlock(&lock);
        return (int)count;
    }
    pthread_mutex_unlock(&lock);
    ssize_t count = pread(fd, buffer, size, offset);
    return count < 0 ? -errno : (int)count;
}

static int pc_write(const char *path, const char *buffer, size_t size, off_t offset, struct fuse_file_info *file) {
    (void)path;
    pthread_mutex_lock(&lock);
    struct dirty *entry;
    int error = load_dirty((int)file->fh, &entry);
    if (error == 0 && !entry) {
        ssize_t count = pwrite((int)file->fh, buffer, size, offset);
        error = count < 0 ? -errno : 0;
        pthread_mutex_unlock(&lock);
        return error != 0 ? error : (int)count;
    }
    if (error == 0) {
        error = reserve(entry, (size_t)offset + size);
    }
    if (error == 0) {
        memcpy(entry->data + offset, buffer, size);
        if ((size_t)offset + size > entry->size) {
            entry->size = (size_t)offset + size;
        }
    }
    pthread_mutex_unlock(&lock);
    return error != 0 ? error : (int)size;
}

static int pc_statfs(const char *path, struct statvfs *status) {
    (void)path;
    if (fstatvfs(backing, status) != 0) {
        return -errno;
    }
    status->f_blocks = 0;
    status->f_bfree = 0;
    status->f_bavail = 0;
    return 0;
}

static int pc_release(const char *path, struct fuse_file_info *file) {
    (void)path;
    close((int)file->fh);
    return 0;
}

/* The one way data reaches the disk: the file's whole unsynced contents written back, then fsynced. */
static int pc_fsync(const char *path, int datasync, struct fuse_file_info *file) {
    (void)path;
    int fd = (int)file->fh;
    struct dirty *entry;
    int error = lock_dirty_of(fd, &entry);
    if (error != 0) {
        return error;
    }
    error = entry ? write_back(fd, entry) : 0;
    if (error == 0 && (datasync ? fdatasync(fd) : fsync(fd)) != 0) {
        error = -errno;
    }
    if (error == 0 && entry) {
        drop_dirty(entry->ino);
    }
    pthread_mutex_unlock(&lock);
    return error;
}

static int pc_fsyncdir(const char *path, int datasync, struct fuse_file_info *file) {
    (void)datasync;
    (void)file;
    int fd = openat(backing, relative(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        return -errno;
    }
    int result = fsync(fd);
    int error = errno;
    close(fd);
    return result == 0 ? 0 : -error;
}

static const struct fuse_operations operations = {
    .init = pc_init,
    .getattr = pc_getattr,
    .access = pc_access,
    .readlink = pc_readlink,
    .readdir = pc_readdir,
    .mkdir = pc_mkdir,
    .unlink = pc_unlink,
    .rmdir = pc_rmdir,
    .symlink = pc_symlink,
    .rename = pc_rename,
    .link = pc_link,
    .chmod = pc_chmod,
    .chown = pc_chown,
    .truncate = pc_truncate,
    .utimens = pc_utimens,
    .open = pc_open,
    .create = pc_create,
    .read = pc_read,
    .write = pc_write,
    .statfs = pc_statfs,
    .release = pc_release,
    .fsync = pc_fsync,
    .fsyncdir = pc_fsyncdir,
};

int main(int argc, char *argv[]) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s BACKING MOUNTPOINT [FUSE options]\n", argv[0]);
        return 2;
    }
    backing = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (backing < 0) {
        perror("powercutfs: backing directory");
        return 1;
    }
    /* fuse_main sees: program, MOUNTPOINT, -f (foreground: the test owns the process), the caller's options. */
    char **arguments = calloc((size_t)argc + 2, sizeof *arguments);
    if (!arguments) {
        return 1;
    }
    int count = 0;
    arguments[count++] = argv[0];
    arguments[count++] = argv[2];
    arguments[count++] = "-f";
    for (int index = 3; index < argc; index++) {
        arguments[count++] = argv[index];
    }
    return fuse_main(count, arguments, &operations, NULL);
}
