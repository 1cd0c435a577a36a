extension Spool {
    /// Back-pressure: refuses a new share with ERR_SPOOL_FULL, before anything is copied, when pending shares,
    /// pending bytes or free disk space are past their limits.
    func checkCapacity(_ configuration: LoaderConfiguration) throws {
        let free = try System.freeBytes(root)
        if free < configuration.minFreeBytes {
            throw ShareError(.spoolFull, "only \(free) bytes free in the state directory, need \(configuration.minFreeBytes)")
        }
        let (shares, bytes) = try ledger.pending()
        if shares >= configuration.maxPendingShares {
            throw ShareError(.spoolFull, "\(shares) shares pending, limit \(configuration.maxPendingShares)")
        }
        if bytes >= configuration.maxPendingBytes {
            throw ShareError(.spoolFull, "\(bytes) bytes pending, limit \(configuration.maxPendingBytes)")
        }
    }
}
