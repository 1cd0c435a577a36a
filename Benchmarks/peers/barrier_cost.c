// What one durability barrier costs for a batch of n small shares on this disk: one syncfs of the file system
// against fsyncs of every file and directory of the batch, issued one after another or from parallel threads.
//
// Each measurement first prepares n share-shaped entries in a fresh directory under DIR — per share a directory
// S holding a 4 KiB copy and a 474-byte manifest, as sharepipe's staging/S — then times only the barrier that
// makes all of them durable:
//
//   syncfs        one syncfs(2) of DIR's file system
//   fsync         fsync of each copy, each manifest and each S, then of the parent: 3n + 1 fsyncs, one thread
//   fsync xT      the same fsyncs shared by T threads (T = 4 and T = 16), so the file system can merge them
//
// The methods take turns within every repetition, so a burst of other work on the machine hits them alike.
//
//     barrier_cost DIR [REPEATS]
//
// Prints one line per batch size: the median and the highest time of each method in milliseconds.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { MAX_SHARES = 256, METHODS = 4, MAX_REPEATS = 99 };

static const char *const method_names[METHODS] = {"syncfs", "fsync", "fsync x4", "fsync x16"};
static const int method_threads[METHODS] = {0, 1, 4, 16};

static int root_fd;
static int descriptors[3 * MAX_SHARES + 1];
static size_t descriptor_count;
static atomic_size_t next_descriptor;
static unsigned long round_number;

static void fail(const char *what, const char *name) {
    fprintf(stderr, "barrier_cost: %s %s: %s\n", what, name, strerror(errno));
    exit(1);
}

static double now(void) {
    struct timespec time;
    clock_gettime(CLOCK_MONOTONIC, &time);
    return (double)time.tv_sec + (double)time.tv_nsec / 1e9;
}

static void write_file(int directory, const char *name, size_t size) {
    static char bytes[4096];
    for (size_t i = 0; i < sizeof bytes; i++) bytes[i] = (char)('a' + (i * 7 + round_number) % 26);
    int fd = openat(directory, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) fail("create", name);
    if (write(fd, bytes, size) != (ssize_t)size) fail("write", name);
    descriptors[descriptor_count++] = fd;
}

// A fresh parent holding n staged shares; their descriptors stay open for the fsync methods.
static int prepare(size_t n, char *parent, size_t length) {
    round_number++;
    snprintf(parent, length, "round-%lu", round_number);
    if (mkdirat(root_fd, parent, 0700) != 0) fail("mkdir", parent);
    int parent_fd = openat(root_fd, parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (parent_fd < 0) fail("open", parent);
    descriptor_count = 0;
    for (size_t i = 0; i < n; i++) {
        char share[32];
        snprintf(share, sizeof share, "share-%03zu", i);
        if (mkdirat(parent_fd, share, 0700) != 0) fail("mkdir", share);
        int share_fd = openat(parent_fd, share, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (share_fd < 0) fail("open", share);
        write_file(share_fd, "copy.bin", 4096);
        write_file(share_fd, "manifest.json", 474);
        descriptors[descriptor_count++] = share_fd;
    }
    descriptors[descriptor_count++] = parent_fd;
    return parent_fd;
}

static void *fsync_worker(void *argument) {
    (void)argument;
    for (;;) {
        size_t index = atomic_fetch_add(&next_descriptor, 1);
        if (index >= descriptor_count) return NULL;
        if (fsync(descriptors[index]) != 0) fail("fsync", "entry");
    }
}

static double barrier(int method, int parent_fd) {
    double start = now();
    if (method_threads[method] == 0) {
        if (syncfs(parent_fd) != 0) fail("syncfs", "directory");
    } else {
        // The parent's fsync comes last, after every share below it is durable, as a publisher would order it.
        descriptor_count--;
        atomic_store(&next_descriptor, 0);
        pthread_t ids[16];
        int threads = method_threads[method];
        for (int i = 0; i < threads; i++) pthread_create(&ids[i], NULL, fsync_worker, NULL);
        for (int i = 0; i < threads; i++) pthread_join(ids[i], NULL);
        descriptor_count++;
        if (fsync(parent_fd) != 0) fail("fsync", "parent");
    }
    return (now() - start) * 1000;
}

// Removes the round's entries and leaves nothing dirty behind for the next measurement.
static void clean(const char *parent, size_t n) {
    for (size_t i = 0; i + 1 < descriptor_count; i++) close(descriptors[i]);
    int fd = descriptors[descriptor_count - 1];
    for (size_t i = 0; i < n; i++) {
        char path[64];
        snprintf(path, sizeof path, "share-%03zu/copy.bin", i);
        unlinkat(fd, path, 0);
        snprintf(path, sizeof path, "share-%03zu/manifest.json", i);
        unlinkat(fd, path, 0);
        snprintf(path, sizeof path, "share-%03zu", i);
        unlinkat(fd, path, AT_REMOVEDIR);
    }
    close(fd);
    if (unlinkat(root_fd, parent, AT_REMOVEDIR) != 0) fail("rmdir", parent);
    syncfs(root_fd);
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc != 2 && argc != 3) {
        fprintf(stderr, "usage: barrier_cost DIR [REPEATS]\n");
        return 2;
    }
    long repeats = argc == 3 ? strtol(argv[2], NULL, 10) : 9;
    if (repeats < 1 || repeats > MAX_REPEATS) repeats = 9;
    if (mkdir(argv[1], 0700) != 0 && errno != EEXIST) fail("mkdir", argv[1]);
    root_fd = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (root_fd < 0) fail("open", argv[1]);
    syncfs(root_fd);

    const size_t sizes[] = {16, 64, 256};
    printf("%-6s", "shares");
    for (int method = 0; method < METHODS; method++) printf("  %-20s", method_names[method]);
    printf("   (ms: median / highest of %ld)\n", repeats);
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        size_t n = sizes[s];
        double times[METHODS][MAX_REPEATS];
        for (long r = 0; r < repeats; r++) {
            for (int method = 0; method < METHODS; method++) {
                char parent[32];
                int parent_fd = prepare(n, parent, sizeof parent);
                times[method][r] = barrier(method, parent_fd);
                clean(parent, n);
            }
        }
        printf("%-6zu", n);
        for (int method = 0; method < METHODS; method++) {
            qsort(times[method], (size_t)repeats, sizeof(double), compare);
            char cell[32];
            snprintf(cell, sizeof cell, "%.1f / %.1f", times[method][repeats / 2], times[method][repeats - 1]);
            printf("  %-20s", cell);
        }
        printf("\n");
    }
    return 0;
}
