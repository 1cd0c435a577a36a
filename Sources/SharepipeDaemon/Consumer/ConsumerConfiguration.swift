import SharepipeSystem

/// How the consumer works: workers, retries, polling, shutdown and retention.
public struct ConsumerConfiguration: Sendable {
    /// Shares processed at the same time (`--workers`), each on a thread of its own.
    public var workers: Int = 2
    /// Attempts before a share is quarantined with ERR_PROCESSOR_FAILED (`--max-attempts`).
    public var maxAttempts: Int = 3
    /// Wait before the second attempt, doubling for each further one (`--retry-delay`).
    public var retryDelay: Duration = .milliseconds(1000)
    /// How often an idle consumer looks at `incoming` when nobody wakes it.
    package var pollInterval: Duration = .milliseconds(200)
    /// How long in-flight work may run on after shutdown begins before it is cancelled and released.
    public var shutdownDeadline: Duration = .seconds(10)
    /// Quarantined shares are purged after this long.
    package var quarantineTTL: Duration = .seconds(7 * 86_400)
    /// Ledger events are pruned after this long.
    package var eventRetention: Duration = .seconds(30 * 86_400)
    /// Where processed, retried and quarantined shares are logged, if anywhere.
    package var logger: Logger?
    /// The time that backoff, not-before checks, polling, shutdown and retention are measured in.
    var clock: any SharepipeClock = SystemClock()

    /// The defaults documented in the README.
    public init() {}
}

/// What a drain did.
public struct ConsumeSummary: Sendable, Equatable {
    /// Shares processed and removed.
    public var processed = 0
    /// Failed attempts that were scheduled for a retry.
    public var retried = 0
    /// Shares quarantined after their last attempt.
    public var quarantined = 0
    /// Unfinished shares released back to `incoming` at shutdown.
    public var released = 0

    /// An empty summary.
    package init() {}

    /// Adds another run's counts to these.
    package mutating func add(_ other: ConsumeSummary) {
        processed += other.processed
        retried += other.retried
        quarantined += other.quarantined
        released += other.released
    }
}
