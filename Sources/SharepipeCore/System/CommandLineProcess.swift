import Glibc

/// The process-wide calls the `sharepipe` executable makes: it lives outside this module, and so outside `System`.
package enum CommandLineProcess {
    /// Whether the descriptor is a terminal. `isatty(3)` answers false with ENOTTY (or EBADF) and is never
    /// interrupted, so there is no error to report.
    package static func isTerminal(_ descriptor: Int32) -> Bool {
        isatty(descriptor) == 1
    }

    /// Ends the process with `status` after stdio's buffers are flushed and `atexit` handlers have run (`exit(3)`).
    package static func exit(_ status: Int32) -> Never {
        Glibc.exit(status)
    }
}
