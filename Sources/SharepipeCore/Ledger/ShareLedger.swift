/// The state of a share as the ledger records it. The directory a share is in is the truth about where it is;
/// the ledger records what happened to it, and recovery makes the two agree.
enum ShareState: String, Sendable, CaseIterable {
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
}

/// A lifecycle event recorded in the ledger.
enum LedgerEvent: String, Sendable, CaseIterable {
    case staged, published, claimed, processed, deleted, failed, retried, quarantined, rejected, recovered, repaired
}

/// The identity of an inbox source file, recorded with its share so a crash between publishing the share and
/// deleting the source cannot ingest the same file twice.
package struct SourceIdentity: Sendable, Equatable, Hashable {
    /// Device number.
    package var device: UInt64
    /// Inode number.
    package var inode: UInt64
    /// Size in bytes.
    package var size: Int64
    /// Modification time, nanoseconds since the epoch.
    package var modificationTime: Int64
    /// SHA-256 of the content, lowercase hex; the loader fills it in from the copy.
    package internal(set) var sha256: String

    /// Creates an identity.
    package init(device: UInt64, inode: UInt64, size: Int64, modificationTime: Int64, sha256: String = "") {
        self.device = device
        self.inode = inode
        self.size = size
        self.modificationTime = modificationTime
        self.sha256 = sha256
    }

    init(_ status: FileStatus) {
        self.init(
            device: status.device, inode: status.inode, size: status.size, modificationTime: status.modificationTime)
    }

    /// A dropped folder, recorded with its files so that recovery can remove it once they are gone: device and
    /// inode only (its size and time change as its entries go), marked by a size of -1.
    static func folder(device: UInt64, inode: UInt64) -> SourceIdentity {
        SourceIdentity(device: device, inode: inode, size: -1, modificationTime: 0)
    }

    var isFolder: Bool { size < 0 }
}

/// A share about to be published: its manifest and the identities of the inbox sources behind its copies.
struct StagedRecord: Sendable {
    var manifest: Manifest
    var sources: [SourceIdentity]
}

/// A transition whose precondition did not hold: the row was not in a state the transition starts from. The row is
/// left as it was; the owner logs it and recovery makes the row follow the share's directory.
struct PreconditionViolation: Sendable, Equatable, CustomStringConvertible {
    var shareID: String
    var expected: [ShareState]
    /// The state found, nil when the ledger has no row for the share.
    var found: ShareState?

    var description: String {
        let states = expected.map(\.rawValue).joined(separator: "|")
        return "share \(shareID): expected \(states), found \(found?.rawValue ?? "none")"
    }
}

/// A consumer-side event for the metrics: what happened, its code, and for a processed share the time from its
/// sources' last write to processed.
struct MetricEvent: Sendable {
    var sequence: Int64
    var event: LedgerEvent
    var code: ShareError.Code?
    var latencySeconds: Double?
}

/// The ledger: share records and lifecycle events with codes and sizes — never content, never file names.
///
/// Every transition is guarded: it applies only to rows in the states it starts from, and the rows it could not
/// apply to come back as `PreconditionViolation`s. Batched calls commit all their shares in one transaction.
/// Implementations hold all of the SQL; nothing else does.
protocol ShareLedger: AnyObject, Sendable {
    // MARK: Publish

    /// Publish: the shares, their attachment events and source identities, state staged, in one durable commit.
    func recordStaged(_ shares: [StagedRecord]) throws
    /// Publish: staged → published after the renames into `incoming`, and the source records of the shares in
    /// `sourcesDone` marked done, in one commit. A share already past published is not a violation.
    func recordPublished(_ shareIDs: [String], sourcesDone: [String]) throws -> [PreconditionViolation]
    /// A share that was never staged (refused, or rolled back by its policy): its row and attachment events, state
    /// rejected, in one commit.
    func recordRolledBack(_ manifest: Manifest, code: ShareError.Code?) throws
    /// Staged → rejected: a share whose staging was removed before it was published; its sources are forgotten.
    func recordUnpublished(_ shareIDs: [String], code: ShareError.Code?) throws -> [PreconditionViolation]
    /// Source identities still recorded as staged: the crash window between publish and source deletion.
    func stagedSources() throws -> [(shareID: String, identity: SourceIdentity)]
    /// The staged source records of one file (device and inode): a daemon that takes a file another one published
    /// and died before unlinking finds it here.
    func stagedSources(device: UInt64, inode: UInt64) throws -> [(shareID: String, identity: SourceIdentity)]
    /// Marks every staged source record done, once recovery has dealt with them.
    func markAllSourcesDone() throws

    // MARK: Consume

    /// Published → claimed, in one commit. Returns the attempts already made by each share claimed.
    func recordClaimed(_ shareIDs: [String]) throws -> (attempts: [String: Int], violations: [PreconditionViolation])
    /// Claimed → processed (attempts + 1), and the copies' deletion, in one commit.
    func recordProcessed(_ completions: [(shareID: String, durationMilliseconds: Int64)]) throws
        -> [PreconditionViolation]
    /// Claimed → published with attempts + 1 and a not-before time (ms since the epoch).
    func recordRetry(shareID: String, code: ShareError.Code, durationMilliseconds: Int64, notBefore: Int64) throws
        -> [PreconditionViolation]
    /// Claimed → quarantined with ERR_PROCESSOR_FAILED; `durationMilliseconds` nil when no attempt ran.
    func recordQuarantined(shareID: String, code: ShareError.Code, durationMilliseconds: Int64?) throws
        -> [PreconditionViolation]
    /// Claimed → published without counting an attempt (graceful shutdown).
    func recordReleased(shareID: String) throws -> [PreconditionViolation]
    /// Claimed → published with attempts + 1 (recovery of a dead claim).
    func recordRecovered(shareID: String) throws -> [PreconditionViolation]
    /// Quarantined → published with attempts reset (requeue).
    func recordRequeued(shareID: String) throws -> [PreconditionViolation]
    /// Quarantined → purged.
    func recordPurged(shareID: String) throws -> [PreconditionViolation]
    /// Recovery: the row follows the directory, whatever state it was in; an event `repaired` records it.
    func repair(shareID: String, to state: ShareState) throws

    // MARK: Queries

    /// The recorded state of a share, nil when it is unknown.
    func state(ofShare shareID: String) throws -> ShareState?
    /// Ids of the shares recorded in a state.
    func shareIDs(inState state: ShareState) throws -> [String]
    /// Published shares whose next attempt must wait: id → not-before (ms since the epoch).
    func deferredShares(now: Int64) throws -> [String: Int64]
    /// Shares staged, published or claimed, and their bytes.
    func pending() throws -> (shares: Int, bytes: Int64)
    /// Attempts recorded for a share.
    func attempts(ofShare shareID: String) throws -> Int
    /// When the first attempt since the share was last published by hand started, ms since the epoch.
    func firstAttemptAt(shareID: String) throws -> Int64?
    /// Retention: drops events, and rows of finished shares, last touched before `cutoff`. Returns events dropped.
    func prune(before cutoff: Int64) throws -> Int
    /// Counts per state, pending bytes, oldest pending, recent failures.
    func status(now: Int64) throws -> SpoolStatus
    /// Every unfinished share, oldest first.
    func listShares() throws -> [ShareListing]
    /// Processed, failed and quarantined events after `sequence`, oldest first.
    func metricEvents(after sequence: Int64, limit: Int) throws -> [MetricEvent]
    /// The newest event sequence number.
    func lastEventSequence() throws -> Int64
    /// A share's row, nil when the ledger does not know it (`sharepipe show`).
    func shareRecord(_ shareID: String) throws -> ShareRecord?
    /// A share's events, oldest first.
    func timeline(ofShare shareID: String) throws -> [TimelineEvent]
    /// Events after a sequence number, oldest first (`sharepipe events`).
    func events(after sequence: Int64, limit: Int) throws -> [TimelineEvent]

    // MARK: Duplicates (issue 21)

    /// Looks up, per claimed content, the earliest copy within the window that counts as an original (ingested or
    /// reserved by a live share; never one of a share rolled back, rejected, quarantined or purged), and records
    /// each claim with what it found (see `ContentReservation`), in one transaction that serializes on the
    /// contents' hashes across every process on the ledger. Returns the origins, one per claim (nil: an original).
    func reserveContents(_ reservation: ContentReservation) throws -> [DuplicateOrigin?]
    /// Forgets the reservations of shares that were never staged (recovery removed their staging directories).
    func releaseContents(ofShares shareIDs: [String]) throws
    /// The duplicate attachments recorded for a share, by index.
    func duplicates(ofShare shareID: String) throws -> [RecordedDuplicate]
    /// Duplicates per UTC day since `since` (ms since the epoch), oldest day first.
    func duplicateDays(since: Int64) throws -> [DuplicateDay]

    // MARK: Leases (claims across hosts)

    /// How long a claim's lease lasts without a heartbeat; nil for a ledger without leases, whose claimers share
    /// one host, where a claim's `flock` alone tells a dead claimer from a live one.
    var leaseDuration: Duration? { get }
    /// Claims whose lease expired, picked for this process: their leases are extended, so that other processes
    /// skip them while this one checks whether their claimer is gone. Empty for a ledger without leases.
    func pickExpiredClaims(limit: Int) throws -> [String]
    /// How many times the ledger reconnected to its server after losing it; a change means the server went away
    /// and came back, and claims that failed to record meanwhile may be waiting for recovery.
    var reconnections: Int { get }
}

/// Milliseconds since the epoch, the ledger's clock.
enum LedgerClock {
    static func now() -> Int64 { System.wallClockNanoseconds() / 1_000_000 }
}
