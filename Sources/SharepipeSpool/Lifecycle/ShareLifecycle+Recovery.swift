import SharepipeLedger

/// Recovery as a table: what the lifecycle does with a share that nobody works on (its lock is free), given the
/// stage its directory is in and the state its row records. The directory is the truth about where a share is;
/// the ledger records what happened to it, and each plan either finishes the transition a crash interrupted or
/// undoes it.
extension ShareLifecycle {
    /// What a recovery plan amounts to, for the report.
    enum RecoveryKind: Sendable, Equatable {
        /// An unpublished share deleted from `staging`.
        case stagingRemoved
        /// A dead claim moved back to `incoming`.
        case returnedToIncoming
        /// A dead claim already recorded processed: its copies removed.
        case completed
        /// An interrupted quarantine or requeue finished.
        case rolledForward
        /// Nothing to do.
        case none
    }

    /// The plan for a share found with a free lock in `stage`. `recorded` is its row's state (nil: no row),
    /// `run` where a claimed row records its processor's run (`.notStarted` for any other row), `hasReason`
    /// whether its directory holds `reason.json`, `reason` the reason to write when a quarantine was recorded before
    /// its `reason.json` was.
    static func recovery(
        of shareID: String, foundIn stage: SpoolStage, recorded: ShareState?, run: RunState, hasReason: Bool,
        reason: QuarantineReason?
    ) -> (run: ShareLifecycle, kind: RecoveryKind) {
        let id = [shareID]
        func plan(_ actions: [Action], _ kind: RecoveryKind) -> (ShareLifecycle, RecoveryKind) {
            (recover(shareID, actions: actions), kind)
        }
        switch (stage, recorded) {
        case (.staging, .staged):
            // Recorded staged, never renamed: the sources are untouched and will be ingested again.
            return plan([.remove(id, from: .staging), .record(.unpublished(id, code: nil))], .stagingRemoved)
        case (.staging, _):
            return plan([.remove(id, from: .staging)], .stagingRemoved)
        case (.processing, .processed), (.processing, .purged):
            return plan([.remove(id, from: .processing), .sync(.processing)], .completed)
        case (.processing, .quarantined):
            var write: [Action] = []
            if !hasReason, let reason { write = [.writeReason(shareID, reason)] }
            return plan(write + [.move(id, from: .processing, to: .quarantine), .sync(.quarantine)], .rolledForward)
        case (.processing, .claimed) where run == .succeeded:
            // The claimer died after its processor succeeded and before the completion was recorded: completed.
            return plan([.record(.finished(shareID)), .remove(id, from: .processing), .sync(.processing)], .completed)
        case (.processing, .claimed):
            // The claimer died. Its death is charged to the share only when the share's processor was running (it
            // may have caused the death); a share merely claimed, or whose run had not started, is never charged.
            let clear: [Action] = hasReason ? [.removeReason(shareID, in: .processing)] : []
            let record: Record = run == .started ? .crashed(shareID) : .recovered(shareID)
            return plan(clear + [.record(record), .move(id, from: .processing, to: .incoming)], .returnedToIncoming)
        case (.processing, _):
            // Claimed by rename before the claim (or even the publish) was recorded, or a row that disagrees: back
            // to `incoming`; reconciliation makes the row say so.
            let clear: [Action] = hasReason ? [.removeReason(shareID, in: .processing)] : []
            return plan(clear + [.move(id, from: .processing, to: .incoming)], .returnedToIncoming)
        case (.quarantine, .published):
            // A requeue recorded before its rename: finished.
            let clear: [Action] = hasReason ? [.removeReason(shareID, in: .quarantine)] : []
            return plan(clear + [.move(id, from: .quarantine, to: .incoming), .sync(.incoming)], .rolledForward)
        case (.incoming, _), (.quarantine, _):
            return plan([], .none)
        }
    }

    /// Reconciliation of a row in a non-terminal state with the directory its share is in (`found`, nil when in
    /// none): nil when they agree, or when the share is in `processing` (a claim in flight, or recovered above);
    /// otherwise the change that makes the row follow the directory, and whether it is a repair (logged as a
    /// precondition violation) rather than a publish rolled forward.
    static func reconciliation(of shareID: String, recorded: ShareState, foundIn found: SpoolStage?)
        -> (record: Record, isRepair: Bool)?
    {
        guard let expected = recorded.stage, found != expected, found != .processing else { return nil }
        if recorded == .staged && found == .incoming {
            // The publisher's crash window between the rename and the published record: a normal publish.
            return (.published([shareID], sourcesDone: []), false)
        }
        let target: ShareState = switch found {
        case .incoming: .published
        case .quarantine: .quarantined
        case .staging: .staged
        case .processing: .claimed
        case nil: recorded == .staged ? .rejected : .purged
        }
        return (.repair(shareID, from: recorded, to: target), true)
    }
}
