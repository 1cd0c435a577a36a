import Glibc

extension System {
    /// Whether a process with this id lives on this host (signal 0: an existing process owned by another user
    /// answers EPERM, which still means it exists).
    static func processExists(_ pid: Int32) -> Bool {
        Glibc.kill(pid, 0) == 0 || errno == EPERM
    }
}
