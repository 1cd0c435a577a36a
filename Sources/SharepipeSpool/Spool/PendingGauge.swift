/// The pending shares and bytes back-pressure compares with the limits: the ledger's last count (plus what this
/// process published since), and the shares admitted and not yet published or given up.
package struct PendingGauge: Sendable {
    /// When the ledger was counted (monotonic ns; 0: never).
    package var takenAt: UInt64 = 0
    package var shares = 0
    package var bytes: Int64 = 0
    package var admitted = 0
    /// Whether shares published by this process were added to the count since the ledger was counted.
    package var addedSinceCount = false

    package init() {}
}
