import Glibc

/// The process-wide calls the `sharepipe` executable makes: it lives outside this module, and so outside `System`.
package enum CommandLineProcess {
    /// Whether the descriptor is a terminal. `isatty(3)` answers false with ENOTTY (or EBADF) and is never
    /// interrupted, so there is no error to report.
    package static func isTerminal(_ descriptor: Int32) -> Bool {
        isatty(descriptor) == 1
    }

    /// Ends the process with `status` once stdio's buffers are flushed, without running `atexit` handlers or
    /// library destructors (`_exit(2)`): the daemon's worker threads are still alive at that moment, and libcrypto's
    /// exit-time cleanup freed the locks a thread was taking (a SIGSEGV in `pthread_rwlock_rdlock` after
    /// `daemon.oneshot_done`, 1 in ~16 runs of two `--oneshot` daemons under load). Nothing the process leaves
    /// needs them: every file and ledger write is complete, or made durable, before a command returns its status.
    package static func exit(_ status: Int32) -> Never {
        fflush(nil)
        Glibc._exit(status)
    }
}
