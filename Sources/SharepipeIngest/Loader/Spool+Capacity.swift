import SharepipeSpool
import SharepipeSystem

extension Spool {
    /// Back-pressure: refuses a new share with ERR_SPOOL_FULL, before anything is copied, when pending shares,
    /// pending bytes or free disk space are past their limits. On a file system that reports no capacity (`statfs`
    /// total 0: many FUSE and some network file systems) free space is unknown, not zero: `--min-free` does not
    /// apply there, the pending limits still do.
    func checkCapacity(_ configuration: LoaderConfiguration) throws {
        try checkFreeSpace(configuration)
        try pendingGauge.withLock { gauge in try check(&gauge, configuration) }
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

    /// Admits one share past the pending limits, exactly: the check and the count of the share are one step, so a
    /// burst of shares cannot all pass on one reading. The share counts until `admissionEnded`; a published one
    /// counts on as pending until the next reading of the ledger.
    func admit(_ configuration: LoaderConfiguration) throws {
        try checkFreeSpace(configuration)
        try pendingGauge.withLock { gauge in
            try check(&gauge, configuration)
            gauge.admitted += 1
        }
    }

    /// An admitted share is published (it stays pending, with its bytes) or given up.
    func admissionEnded(published: Bool, bytes: Int64) {
        pendingGauge.withLock { gauge in
            gauge.admitted -= 1
            if published {
                gauge.shares += 1
                gauge.bytes += bytes
                gauge.addedSinceCount = true
            }
        }
    }

    private func checkFreeSpace(_ configuration: LoaderConfiguration) throws {
        if capabilities.capacityKnown, case let free = try freeBytes(above: configuration.minFreeBytes),
            free < configuration.minFreeBytes
        {
            let limit = configuration.minFreeBytes
            throw ShareError(.spoolFull, "only \(free) bytes free in the state directory, --min-free is \(limit)")
        }
    }

    /// Compares the gauge with the limits; a refusal that rests on shares added since the ledger was counted (some
    /// may be processed by now) is checked again on a fresh count.
    private func check(_ gauge: inout PendingGauge, _ configuration: LoaderConfiguration) throws {
        try refresh(&gauge, force: false)
        do {
            try Self.refuse(gauge, configuration)
        } catch {
            guard gauge.addedSinceCount else { throw error }
            try refresh(&gauge, force: true)
            try Self.refuse(gauge, configuration)
        }
    }

    private static func refuse(_ gauge: PendingGauge, _ configuration: LoaderConfiguration) throws {
        let shares = gauge.shares + gauge.admitted
        if shares >= configuration.maxPendingShares {
            throw ShareError(.spoolFull, "\(shares) shares pending, limit \(configuration.maxPendingShares)")
        }
        if gauge.bytes >= configuration.maxPendingBytes {
            throw ShareError(.spoolFull, "\(gauge.bytes) bytes pending, limit \(configuration.maxPendingBytes)")
        }
    }

    /// Pending shares and bytes are counted in the ledger at most once a second: counting costs a pass over every
    /// pending share, so with a deep backlog a count per new share would cost more than the share. In between, the
    /// shares this process admitted and published are added to the last count, so it never counts too few; a refusal
    /// that rests on such additions is checked on a fresh count (shares processed since are no longer pending). The
    /// count runs under the gauge's lock: a publish cannot land between the count and its storing.
    private func refresh(_ gauge: inout PendingGauge, force: Bool) throws {
        let now = System.monotonicNanoseconds()
        guard force || gauge.takenAt == 0 || now >= gauge.takenAt + 1_000_000_000 else { return }
        let (shares, bytes) = try ledger.pending()
        gauge.takenAt = max(1, now)
        gauge.shares = shares
        gauge.bytes = bytes
        gauge.addedSinceCount = false
    }
}
