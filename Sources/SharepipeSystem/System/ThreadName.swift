import Glibc

extension System {
    /// Names the calling thread for the kernel (`top -H`, `ps -L`, perf), at most 15 bytes; best effort.
    package static func nameCurrentThread(_ name: String) {
        guard let file = try? FileDescriptor.open("/proc/thread-self/comm", flags: O_WRONLY) else { return }
        try? file.writeAll(Array(name.utf8.prefix(15)))
    }
}
