import Glibc

extension System {
    /// Whether a process with this id lives on this host (signal 0: an existing process owned by another user
    /// answers EPERM, which still means it exists).
    package static func processExists(_ pid: Int32) -> Bool {
        Glibc.kill(pid, 0) == 0 || errno == EPERM
    }

    /// Lowers the calling thread's scheduling priority to `niceness` (Linux schedules threads one by one, so this
    /// leaves the rest of the process as it was). Failure is harmless and ignored.
    package static func lowerCurrentThreadPriority(to niceness: Int32) {
        // The thread's id, from /proc/thread-self ("PID/task/TID"): Swift sees neither gettid nor syscall.
        var link = [CChar](repeating: 0, count: 64)
        let length = readlink("/proc/thread-self", &link, link.count - 1)
        guard length > 0 else { return }
        let target = String(decoding: link[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard let last = target.split(separator: "/").last, let thread = id_t(last) else { return }
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), thread, niceness)
    }
}
