import SharepipeSystem

/// The state of a share as the ledger records it. The directory a share is in is the truth about where it is;
/// the ledger records what happened to it, and recovery makes the two agree.
package enum ShareState: String, Sendable, CaseIterable {
    /// Copies and manifest written and durable in `staging/S`; not yet visible.
    case staged
    /// Renamed into `incoming/S`: visible to consumers.
    case published
    /// Renamed into `processing/S` by a consumer, which may be running the processor.
    case claimed
    /// Processed; `processing/S` is removed (or about to be).
    case processed
    /// Failed for good; in `quarantine/S` with `reason.json`.
    case quarantined
    /// Never published (refused, rolled back, or its staging removed by recovery).
    case rejected
    /// A quarantined share deleted by purge or retention.
    case purged

    /// Whether the share still has a directory in the spool.
    var isTerminal: Bool { self == .processed || self == .rejected || self == .purged }

    /// The stage whose directory holds a share in this state; nil for a finished share.
    package var stage: SpoolStage? {
        switch self {
        case .staged: .staging
        case .published: .incoming
        case .claimed: .processing
        case .quarantined: .quarantine
        case .processed, .rejected, .purged: nil
        }
    }
}

/// Where a claim's processor run is, as the ledger records it (`shares.run`): what the recovery of a dead claim
/// needs to know to charge its death to the share, or not.
package enum RunState: Int, Sendable, CaseIterable {
    /// Not started: the share is only claimed (or not claimed at all). A death charges nothing.
    case notStarted = 0
    /// Started and not ended: a death is charged to the share (its processor may have caused it).
    case started = 1
    /// Ended in success, its completion not recorded yet: a death rolls the completion forward.
    case succeeded = 2
}

/// What a claimed share has behind it: the attempts its processor made (runs that ended), and the consecutive
/// deaths of a daemon its processor was running at (runs a death cut short, since the last run that ended).
package struct ClaimHistory: Sendable, Equatable {
    package var attempts: Int
    package var deaths: Int

    package init(attempts: Int, deaths: Int) {
        self.attempts = attempts
        self.deaths = deaths
    }
}

/// A lifecycle event recorded in the ledger.
package enum LedgerEvent: String, Sendable, CaseIterable {
    case staged, published, claimed, processed, deleted, failed, retried, quarantined, rejected, recovered, repaired
    /// A claim's processor was running when its daemon died (a `recovered` claim's was not).
    case crashed
}

/// A share about to be published: its manifest and the identities of the inbox sources behind its copies.
package struct StagedRecord: Sendable {
    package var manifest: Manifest
    var sources: [SourceIdentity]

    package init(manifest: Manifest, sources: [SourceIdentity]) {
        self.manifest = manifest
        self.sources = sources
    }
}

/// A transition whose precondition did not hold: the row was not in a state the transition starts from. The row is
/// left as it was; the owner logs it and recovery makes the row follow the share's directory.
package struct PreconditionViolation: Sendable, Equatable, CustomStringConvertible {
    package var shareID: String
    package var expected: [ShareState]
    /// The state found, nil when the ledger has no row for the share.
    package var found: ShareState?

    package var description: String {
        let states = expected.map(\.rawValue).joined(separator: "|")
        return "share \(shareID): expected \(states), found \(found?.rawValue ?? "none")"
    }

    package init(shareID: String, expected: [ShareState], found: ShareState? = nil) {
        self.shareID = shareID
        self.expected = expected
        self.found = found
    }
}
