// The durable small-file copy limit of this machine: every file of SOURCE is copied into SPOOL the crash-safe
// way (open, read, write into a temporary name, fsync the file, rename, fsync the directory), then the source and
// the copy are unlinked, as a drop folder that processes and deletes does. THREADS workers share the files and the
// one spool directory, so their directory fsyncs can share journal commits.
//
//     durable_copy SOURCE SPOOL THREADS
//
// Prints "files seconds files_per_second" on stdout.
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char **names;
static size_t count;
static atomic_size_t next_index;
static int source_fd;
static int spool_fd;

static void fail(const char *what, const char *name) {
    fprintf(stderr, "durable_copy: %s %s: %s\n", what, name, strerror(errno));
    exit(1);
}

static void copy_one(const char *name, long worker) {
    static __thread char buffer[1 << 16];
    char temporary[512];
    char final[512];
    snprintf(temporary, sizeof temporary, ".tmp-%ld-%s", worker, name);
    snprintf(final, sizeof final, "%s", name);

    int in = openat(source_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (in < 0) fail("open", name);
    int out = openat(spool_fd, temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640);
    if (out < 0) fail("create", temporary);
    for (;;) {
        ssize_t got = read(in, buffer, sizeof buffer);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) fail("read", name);
        if (got == 0) break;
        for (ssize_t done = 0; done < got;) {
            ssize_t put = write(out, buffer + done, (size_t)(got - done));
            if (put < 0 && errno == EINTR) continue;
            if (put < 0) fail("write", temporary);
            done += put;
        }
    }
    if (fsync(out) != 0) fail("fsync", temporary);
    close(out);
    close(in);
    if (renameat(spool_fd, temporary, spool_fd, final) != 0) fail("rename", temporary);
    if (fsync(spool_fd) != 0) fail("fsync", "spool directory");
    if (unlinkat(source_fd, name, 0) != 0) fail("unlink", name);
    if (unlinkat(spool_fd, final, 0) != 0) fail("unlink", final);
}

static void *worker(void *argument) {
    long number = (long)argument;
    for (;;) {
        size_t index = atomic_fetch_add(&next_index, 1);
        if (index >= count) return NULL;
        copy_one(names[index], number);
    }
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: durable_copy SOURCE SPOOL THREADS\n");
        return 2;
    }
    long threads = strtol(argv[3], NULL, 10);
    if (threads < 1 || threads > 64) threads = 1;
    source_fd = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (source_fd < 0) fail("open", argv[1]);
    spool_fd = open(argv[2], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (spool_fd < 0) fail("open", argv[2]);

    DIR *directory = fdopendir(dup(source_fd));
    if (directory == NULL) fail("opendir", argv[1]);
    size_t capacity = 1024;
    names = malloc(capacity * sizeof *names);
    for (struct dirent *entry; (entry = readdir(directory)) != NULL;) {
        if (entry->d_name[0] == '.') continue;
        if (count == capacity) {
            capacity *= 2;
            names = realloc(names, capacity * sizeof *names);
        }
        names[count++] = strdup(entry->d_name);
    }
    closedir(directory);

    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    pthread_t ids[64];
    for (long i = 0; i < threads; i++) pthread_create(&ids[i], NULL, worker, (void *)i);
    for (long i = 0; i < threads; i++) pthread_join(ids[i], NULL);
    clock_gettime(CLOCK_MONOTONIC, &end);
    double seconds = (double)(end.tv_sec - start.tv_sec) + (double)(end.tv_nsec - start.tv_nsec) / 1e9;
    printf("%zu %.3f %.1f\n", count, seconds, (double)count / seconds);
    return 0;
}
