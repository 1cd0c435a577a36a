// The durable batched limit of this machine: the file operations sharepipe does per single-file share on the
// ingest + discard path, with the durability barriers paid once per batch (group commit), as a C loop without
// sniffing, hashing or a ledger. Every file of INBOX is taken; each worker thread takes up to BATCH files at a time
// and, for that batch:
//
//   1. per file: open the source (O_NOFOLLOW|O_NONBLOCK, fstat, flock), mkdir staging/S, copy it to
//      staging/S/<id>.<ext>, write staging/S/manifest.json;
//   2. one syncfs of the state file system (the barrier);
//   3. per share: rename staging/S -> incoming/S; then one fsync of incoming;
//   4. per file: unlink the source, close it; then one fsync of INBOX;
//   5. per share (the consumer): rename incoming/S -> processing/S, unlink the copy and the manifest, rmdir.
//
//     group_commit INBOX STATE THREADS [BATCH]
//
// STATE gets staging, incoming and processing directories. BATCH defaults to 256. Prints
// "files seconds files_per_second" on stdout, like durable_copy.
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { MAX_BATCH = 4096 };

static char **names;
static size_t count;
static size_t batch_size = 256;
static atomic_size_t next_index;
static atomic_ulong next_id;
static int inbox_fd;
static int staging_fd;
static int incoming_fd;
static int processing_fd;

static void fail(const char *what, const char *name) {
    fprintf(stderr, "group_commit: %s %s: %s\n", what, name, strerror(errno));
    exit(1);
}

static int open_directory(int at, const char *path) {
    if (mkdirat(at, path, 0700) != 0 && errno != EEXIST) fail("mkdir", path);
    int fd = openat(at, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) fail("open", path);
    return fd;
}

struct share {
    const char *name;
    int source;
    char id[40];
    char copy[96];
    char manifest[64];
};

static void write_all(int fd, const char *bytes, size_t length, off_t offset, const char *name) {
    for (size_t done = 0; done < length;) {
        ssize_t put = pwrite(fd, bytes + done, length - done, offset + (off_t)done);
        if (put < 0 && errno == EINTR) continue;
        if (put < 0) fail("write", name);
        done += (size_t)put;
    }
}

// Step 1 for one file: the source stays open (and locked) until it is unlinked, as sharepipe holds it.
static void stage(struct share *share) {
    static __thread char buffer[1 << 16];
    unsigned long number = atomic_fetch_add(&next_id, 1);
    snprintf(share->id, sizeof share->id, "%08x-0000-4000-8000-%012lx", (unsigned)getpid(), number);
    const char *dot = strrchr(share->name, '.');
    snprintf(share->copy, sizeof share->copy, "%s/%08x-0000-4000-8000-%012lx%s", share->id, (unsigned)getpid(),
             number, dot ? dot : "");
    snprintf(share->manifest, sizeof share->manifest, "%s/manifest.json", share->id);

    share->source = openat(inbox_fd, share->name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (share->source < 0) fail("open", share->name);
    struct stat status;
    if (fstat(share->source, &status) != 0) fail("fstat", share->name);
    if (flock(share->source, LOCK_EX | LOCK_NB) != 0) fail("flock", share->name);
    if (mkdirat(staging_fd, share->id, 0700) != 0) fail("mkdir", share->id);

    int out = openat(staging_fd, share->copy, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (out < 0) fail("create", share->copy);
    off_t offset = 0;
    for (;;) {
        ssize_t got = pread(share->source, buffer, sizeof buffer, offset);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) fail("read", share->name);
        if (got == 0) break;
        write_all(out, buffer, (size_t)got, offset, share->copy);
        offset += got;
    }
    close(out);

    char manifest[640];
    int length = snprintf(manifest, sizeof manifest,
        "{\"attachments\":[{\"bytes\":%lld,\"fileId\":\"%s\",\"path\":\"%s\",\"suggestedName\":\"%s\","
        "\"type\":\"public.data\",\"attempts\":[]}],\"createdAt\":\"2026-01-01T00:00:00Z\",\"shareId\":\"%s\","
        "\"source\":{\"kind\":\"inbox\"},\"version\":1}\n",
        (long long)offset, share->copy, share->copy, share->name, share->id);
    out = openat(staging_fd, share->manifest, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (out < 0) fail("create", share->manifest);
    write_all(out, manifest, (size_t)length, 0, share->manifest);
    close(out);
}

static void run_batch(struct share *shares, size_t n) {
    for (size_t i = 0; i < n; i++) stage(&shares[i]);
    if (syncfs(staging_fd) != 0) fail("syncfs", "state");
    for (size_t i = 0; i < n; i++) {
        if (renameat(staging_fd, shares[i].id, incoming_fd, shares[i].id) != 0) fail("rename", shares[i].id);
    }
    if (fsync(incoming_fd) != 0) fail("fsync", "incoming");
    for (size_t i = 0; i < n; i++) {
        if (unlinkat(inbox_fd, shares[i].name, 0) != 0) fail("unlink", shares[i].name);
        close(shares[i].source);
    }
    if (fsync(inbox_fd) != 0) fail("fsync", "inbox");
    for (size_t i = 0; i < n; i++) {
        if (renameat(incoming_fd, shares[i].id, processing_fd, shares[i].id) != 0) fail("claim", shares[i].id);
        if (unlinkat(processing_fd, shares[i].copy, 0) != 0) fail("unlink", shares[i].copy);
        if (unlinkat(processing_fd, shares[i].manifest, 0) != 0) fail("unlink", shares[i].manifest);
        if (unlinkat(processing_fd, shares[i].id, AT_REMOVEDIR) != 0) fail("rmdir", shares[i].id);
    }
}

static void *worker(void *argument) {
    (void)argument;
    struct share *shares = calloc(batch_size, sizeof *shares);
    if (shares == NULL) fail("allocate", "batch");
    for (;;) {
        size_t first = atomic_fetch_add(&next_index, batch_size);
        if (first >= count) break;
        size_t n = count - first < batch_size ? count - first : batch_size;
        for (size_t i = 0; i < n; i++) shares[i].name = names[first + i];
        run_batch(shares, n);
    }
    free(shares);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: group_commit INBOX STATE THREADS [BATCH]\n");
        return 2;
    }
    long threads = strtol(argv[3], NULL, 10);
    if (threads < 1 || threads > 64) threads = 1;
    if (argc == 5) {
        long batch = strtol(argv[4], NULL, 10);
        batch_size = batch < 1 ? 1 : batch > MAX_BATCH ? MAX_BATCH : (size_t)batch;
    }
    inbox_fd = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (inbox_fd < 0) fail("open", argv[1]);
    int state_fd = open_directory(AT_FDCWD, argv[2]);
    staging_fd = open_directory(state_fd, "staging");
    incoming_fd = open_directory(state_fd, "incoming");
    processing_fd = open_directory(state_fd, "processing");

    DIR *directory = fdopendir(dup(inbox_fd));
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
    for (long i = 0; i < threads; i++) pthread_create(&ids[i], NULL, worker, NULL);
    for (long i = 0; i < threads; i++) pthread_join(ids[i], NULL);
    clock_gettime(CLOCK_MONOTONIC, &end);
    double seconds = (double)(end.tv_sec - start.tv_sec) + (double)(end.tv_nsec - start.tv_nsec) / 1e9;
    printf("%zu %.3f %.1f\n", count, seconds, (double)count / seconds);
    return 0;
}
