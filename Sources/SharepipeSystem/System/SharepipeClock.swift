/// Where time comes from for the parts whose rules are durations: the inbox watcher's settle windows and rescans,
/// the consumer's retry backoff, not-before checks and polling, and the lease keeper's turns.
///
/// Production runs on `SystemClock`; the tests drive a manual clock, so that a settle window or a backoff is checked
/// by moving time rather than by waiting for it. Both readings (monotonic and wall) come from one clock, so a manual
/// clock moves them together.
package protocol SharepipeClock: Sendable {
    /// Monotonic time in nanoseconds (settle windows, intervals).
    func monotonicNanoseconds() -> UInt64
    /// Wall-clock time in milliseconds since the epoch, the ledger's clock (retry not-before times).
    func wallMilliseconds() -> Int64
    /// Suspends the task for `duration` of this clock; throws `CancellationError` when the task is cancelled.
    func sleep(for duration: Duration) async throws
    /// Blocks the calling thread until one of `descriptors` is readable (or hung up) or this clock reaches `deadline`
    /// (monotonic nanoseconds); nil waits without a deadline. Returns, per descriptor, whether it is ready.
    func waitReadable(_ descriptors: [Int32], until deadline: UInt64?) throws -> [Bool]
}

/// The real clocks: `CLOCK_MONOTONIC`, `CLOCK_REALTIME`, `Task.sleep` and `poll(2)`.
package struct SystemClock: SharepipeClock {
    package init() {}

    package func monotonicNanoseconds() -> UInt64 {
        System.monotonicNanoseconds()
    }

    package func wallMilliseconds() -> Int64 {
        LedgerClock.now()
    }

    package func sleep(for duration: Duration) async throws {
        try await Task.sleep(for: duration)
    }

    package func waitReadable(_ descriptors: [Int32], until deadline: UInt64?) throws -> [Bool] {
        let timeout = deadline.map { deadline in
            let now = System.monotonicNanoseconds()
            return deadline > now ? deadline - now : 0
        }
        return try System.waitReadable(descriptors, timeout: timeout)
    }
}

/// Milliseconds since the epoch, the ledger's clock.
package enum LedgerClock {
    package static func now() -> Int64 { System.wallClockNanoseconds() / 1_000_000 }
}
