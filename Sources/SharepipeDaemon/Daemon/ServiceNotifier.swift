import SharepipeSystem

/// The systemd notify protocol over `NOTIFY_SOCKET` (a path, or an abstract name starting with `@`).
/// Without the variable every call does nothing.
struct ServiceNotifier: Sendable {
    let socket: String?
    /// Half of `WATCHDOG_USEC`, when the watchdog is on.
    let watchdogInterval: Duration?

    /// Reads `NOTIFY_SOCKET` and `WATCHDOG_USEC` (honoured only when `WATCHDOG_PID` is unset or ours).
    init(environment: [String: String]) {
        socket = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
        let pidMatches = environment["WATCHDOG_PID"].map { $0 == String(System.processID) } ?? true
        if pidMatches, let usec = environment["WATCHDOG_USEC"].flatMap(Int64.init), usec > 0 {
            watchdogInterval = .microseconds(usec / 2)
        } else {
            watchdogInterval = nil
        }
    }

    /// Sends `READY=1`, `STATUS=…`, `WATCHDOG=1`, `STOPPING=1` or several of them, newline-separated.
    func send(_ assignments: String...) {
        guard let socket else { return }
        try? System.notify(socket: socket, message: assignments.joined(separator: "\n"))
    }
}
