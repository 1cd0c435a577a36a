import Foundation
import SharepipeCore

/// An age for people: `42s`, `5m 3s`, `3h 2m`, `2d 4h`.
func formatAge(seconds: Int) -> String {
    let seconds = max(0, seconds)
    switch seconds {
    case ..<60: return "\(seconds)s"
    case ..<3600: return "\(seconds / 60)m \(seconds % 60)s"
    case ..<86_400: return "\(seconds / 3600)h \(seconds % 3600 / 60)m"
    default: return "\(seconds / 86_400)d \(seconds % 86_400 / 3600)h"
    }
}

/// Whole seconds from `date` to now; never negative.
func secondsSince(_ date: Date, now: Date = Date()) -> Int {
    max(0, Int(now.timeIntervalSince(date).rounded(.down)))
}

/// `sharepipe status`: shares per stage, copies in flight, pending bytes, the oldest pending share, failures of the
/// last 24 hours.
struct StatusCommand: Command {
    static let name = "status"
    static let abstract =
        "Show shares per stage, copies in flight, pending bytes, the last 24 hours' failures and duplicates per day."
    static let options: [any OptionDeclaration] = [ProcessorOptions.state] + LedgerOptions.all + [CommonOptions.json]
    static let discussion = """
        Stage counts are the share directories on disk; bytes, ages and failures come from the ledger. Copies in
        flight are read from staging as they are written, by a running daemon or share command: the bytes copied so
        far of the sizes their sources had when the copy began (a copy under 1 MiB counts as done). The state
        directory must exist: status never creates it (a missing one is ERR_CONTAINER_UNAVAILABLE, exit 1).
        """

    /// The JSON shape: every key always present.
    struct Report: Encodable {
        /// Shares per stage directory.
        struct Stages: Encodable {
            var staging: Int
            var incoming: Int
            var processing: Int
            var quarantine: Int
        }

        /// Copies being written into staging by live loaders.
        struct InFlight: Encodable {
            var copies: Int
            var bytesDone: Int64
            var bytesTotal: Int64
        }

        var state: String
        var stages: Stages
        var inFlight: InFlight
        var pendingBytes: Int64
        var oldestPendingAgeSeconds: Int?
        var recentFailures: [String: Int]
        var processed: Int
        var rejected: Int
        /// issue 19: HTTP bodies being received and resumable uploads not finished.
        var uploads: Uploads

        struct Uploads: Encodable {
            var receiving: Int
            var resumable: Int
        }

        /// issue 33: webhook deliveries not yet acknowledged, and kept as failed.
        var notifications: Notifications

        struct Notifications: Encodable {
            var pending: Int
            var failed: Int
        }

        /// Duplicate attachments per UTC day over the last 30 days, oldest first; days without any are left out.
        var duplicatesPerDay: [DuplicateDay]

        enum CodingKeys: String, CodingKey {
            case state, stages, inFlight, pendingBytes, oldestPendingAgeSeconds, recentFailures, processed, rejected
            case uploads, duplicatesPerDay, notifications
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(state, forKey: .state)
            try container.encode(stages, forKey: .stages)
            try container.encode(inFlight, forKey: .inFlight)
            try container.encode(pendingBytes, forKey: .pendingBytes)
            try container.encode(oldestPendingAgeSeconds, forKey: .oldestPendingAgeSeconds)
            try container.encode(recentFailures, forKey: .recentFailures)
            try container.encode(processed, forKey: .processed)
            try container.encode(rejected, forKey: .rejected)
            try container.encode(uploads, forKey: .uploads)
            try container.encode(duplicatesPerDay, forKey: .duplicatesPerDay)
            try container.encode(notifications, forKey: .notifications)
        }
    }

    let state: String
    let ledger: LedgerLocation
    let json: Bool

    init(arguments: ParsedArguments) throws {
        state = ProcessorOptions.stateDirectory(arguments)
        ledger = try LedgerOptions.location(arguments)
        json = arguments[CommonOptions.json]
    }

    func run() throws -> ExitCode {
        let spool = try Spool.openExisting(root: state, ledger: ledger)
        let status = try spool.status()
        func count(_ stage: Spool.Stage) throws -> Int { try spool.shareIDs(in: stage).count }
        let copies = try spool.copiesInFlight()
        let uploads = HTTPUploadsInFlight.count(in: spool)
        let report = Report(
            state: spool.root,
            stages: Report.Stages(
                staging: try count(.staging), incoming: try count(.incoming), processing: try count(.processing),
                quarantine: try count(.quarantine)),
            inFlight: Report.InFlight(
                copies: copies.count, bytesDone: copies.reduce(0) { $0 + $1.bytesDone },
                bytesTotal: copies.reduce(0) { $0 + $1.bytesTotal }),
            pendingBytes: status.pendingBytes,
            oldestPendingAgeSeconds: status.oldestPendingCreatedAt.map { secondsSince($0) },
            recentFailures: Dictionary(uniqueKeysWithValues: status.recentFailures.map { ($0.key.rawValue, $0.value) }),
            processed: status.processed, rejected: status.rejected,
            uploads: Report.Uploads(receiving: uploads.bodies, resumable: uploads.resumable),
            notifications: try notificationCounts(spool),
            duplicatesPerDay: try spool.duplicateDays(last: 30))
        if json {
            try Output.printJSON(report)
        } else {
            printTable(report)
        }
        return .success
    }

    private func notificationCounts(_ spool: Spool) throws -> Report.Notifications {
        let counts = try spool.notificationCounts()
        return Report.Notifications(pending: counts.pending, failed: counts.failed)
    }

    private func printTable(_ report: Report) {
        let stages = report.stages
        let pendingShares = stages.staging + stages.incoming + stages.processing
        let plural = pendingShares == 1 ? "" : "s"
        var pending = "\(pendingShares) share\(plural), \(Output.formatBytes(report.pendingBytes))"
        if let age = report.oldestPendingAgeSeconds { pending += ", oldest \(formatAge(seconds: age)) old" }
        let inFlight = report.inFlight
        let copying = inFlight.copies == 0 ? "none" : "\(inFlight.copies) cop\(inFlight.copies == 1 ? "y" : "ies"), "
            + "\(Output.formatBytes(inFlight.bytesDone)) / \(Output.formatBytes(inFlight.bytesTotal))"
        let failures = report.recentFailures.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
        let quarantine = stages.quarantine > 0
            ? Output.styled(String(stages.quarantine), .yellow, for: .standardOutput) : String(stages.quarantine)
        let rows = [
            ["state", report.state],
            ["staging", String(stages.staging)],
            ["incoming", String(stages.incoming)],
            ["processing", String(stages.processing)],
            ["quarantine", quarantine],
            ["copying", copying],
            ["pending", pending],
            ["processed", String(report.processed)],
            ["rejected", String(report.rejected)],
            ["failures (24 h)", failures.isEmpty ? "none" : failures.joined(separator: ", ")],
            ["uploads", "\(report.uploads.receiving) receiving, \(report.uploads.resumable) resumable unfinished"],
            ["notifications", "\(report.notifications.pending) pending, \(report.notifications.failed) failed"],
        ]
        let duplicates = report.duplicatesPerDay.enumerated().map { index, day in
            [index == 0 ? "duplicates (30 d)" : "", day.day + ": \(day.flagged) flagged, \(day.rejected) rejected"]
        }
        Output.write(Output.table(rows + (duplicates.isEmpty ? [["duplicates (30 d)", "none"]] : duplicates)))
    }
}
