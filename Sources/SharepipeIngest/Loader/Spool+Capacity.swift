import SharepipeSpool
import SharepipeSystem

extension Spool {
    /// Back-pressure: refuses a new share with ERR_SPOOL_FULL, before anything is copied, when pending shares,
    /// pending bytes or free disk space are past their limits. On a file system that reports no capacity (`statfs`
    /// total 0: many FUSE and some network file systems) free space is unknown, not zero: `--min-free` does not
    /// apply there, the pending limits still do.
    func checkCapacity(_ configuration: LoaderConfiguration) throws {
        if capabilities.capacityKnown, case let free = try freeBytes(above: configuration.minFreeBytes),
            free < configuration.minFreeBytes
        {
            let limit = configuration.minFreeBytes
            throw ShareError(.spoolFull, "only \(free) bytes free in the state directory, --min-free is \(limit)")
        }
        let (shares, bytes) = try pending()
        if shares >= configuration.maxPendingShares {
            throw ShareError(.spoolFull, "\(shares) shares pending, limit \(configuration.maxPendingShares)")
        }
        if bytes >= configuration.maxPendingBytes {
            throw ShareError(.spoolFull, "\(bytes) bytes pending, limit \(configuration.maxPendingBytes)")
        }
    }

    /// Free bytes in the state directory's file system. A reading less than a second old is reused while it is
    /// more than a GiB above `minimum` (a `statfs` per share showed up in the syscall count); near the limit every
    /// share reads it again.
    private func freeBytes(above minimum: Int64) throws -> Int64 {
        let now = System.monotonicNanoseconds()
        if let gauge = freeGauge.withLock({ $0 }), now < gauge.takenAt + 1_000_000_000,
            gauge.free - minimum > 1 << 30
        {
            return gauge.free
        }
        let free = try System.freeBytes(root)
        freeGauge.withLock { $0 = (now, free) }
        return free
    }

    /// Pending shares and bytes, counted in the ledger at most once a second. Counting costs a pass over every
    /// pending share, so with a deep backlog a count per new share would cost more than the share; a limit that is
    /// up to a second stale is still a limit.
    private func pending() throws -> (shares: Int, bytes: Int64) {
        let now = System.monotonicNanoseconds()
        if let gauge = pendingGauge.withLock({ $0 }), now < gauge.takenAt + 1_000_000_000 {
            return (gauge.shares, gauge.bytes)
        }
        let (shares, bytes) = try ledger.pending()
        pendingGauge.withLock { $0 = (now, shares, bytes) }
        return (shares, bytes)
    }
}
