import Foundation
import SharepipeCore

/// `sharepipe ls`: every unfinished share, stage by stage, with what its manifest and the ledger say about it.
struct LsCommand: Command {
    static let name = "ls"
    static let abstract = "List the shares in staging, incoming, processing and quarantine."
    static let options: [any OptionDeclaration] = [ProcessorOptions.state] + LedgerOptions.all + [CommonOptions.json]
    static let discussion = """
        One row per share directory, stage by stage, oldest first: attachments copied, bytes, age, processor
        attempts and the attachments' suggested names (the local operator's view: names come from the manifests
        and are shown here, never logged). Quarantined shares also show why they failed. The state directory must
        exist: ls never creates it (a missing one is ERR_CONTAINER_UNAVAILABLE, exit 1). With a PostgreSQL
        --ledger, a share in processing also shows the daemon holding its claim (host:pid:boot-id).
        """

    /// The JSON shape: `{"shares": [Entry]}`, every key always present.
    struct Report: Encodable {
        var shares: [Entry]
    }

    /// One share.
    struct Entry: Encodable {
        var shareId: String
        var stage: String
        /// Copied attachments.
        var attachments: Int
        var bytes: Int64
        /// RFC 3339, from the manifest; null while a share in staging has none.
        var createdAt: String?
        var ageSeconds: Int?
        var attempts: Int
        var lastCode: String?
        /// Seconds until a share waiting for a retry may be claimed again; null when it may be now.
        var retryInSeconds: Int?
        var sourceApp: String?
        var suggestedNames: [String]
        /// The last attempt's error, for a quarantined share.
        var reason: String?
        /// Who holds the claim of a share in processing (host:pid:boot-id), with a PostgreSQL ledger.
        var claimedBy: String?

        enum CodingKeys: String, CodingKey {
            case shareId, stage, attachments, bytes, createdAt, ageSeconds, attempts, lastCode, retryInSeconds
            case sourceApp, suggestedNames, reason, claimedBy
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(shareId, forKey: .shareId)
            try container.encode(stage, forKey: .stage)
            try container.encode(attachments, forKey: .attachments)
            try container.encode(bytes, forKey: .bytes)
            try container.encode(createdAt, forKey: .createdAt)
            try container.encode(ageSeconds, forKey: .ageSeconds)
            try container.encode(attempts, forKey: .attempts)
            try container.encode(lastCode, forKey: .lastCode)
            try container.encode(retryInSeconds, forKey: .retryInSeconds)
            try container.encode(sourceApp, forKey: .sourceApp)
            try container.encode(suggestedNames, forKey: .suggestedNames)
            try container.encode(reason, forKey: .reason)
            try container.encode(claimedBy, forKey: .claimedBy)
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
        let entries = try Self.entries(spool)
        if json {
            try Output.printJSON(Report(shares: entries))
        } else if entries.isEmpty {
            Output.write("no shares in \(spool.root)\n", to: .standardError)
        } else {
            printTable(entries)
        }
        return .success
    }

    /// Stage directories on disk are the truth for where a share is; the ledger adds ages and attempts, the
    /// manifest counts, names and the source app.
    static func entries(_ spool: Spool, now: Date = Date()) throws -> [Entry] {
        let ledger = Dictionary(try spool.listShares().map { ($0.shareId, $0) }) { first, _ in first }
        var entries: [Entry] = []
        for stage in Spool.Stage.allCases {
            for shareID in try spool.shareIDs(in: stage) {
                let listing = ledger[shareID]
                // Staging may have no manifest yet, and a share can move on between the listing and the read.
                let manifest = try? spool.manifest(stage, shareID)
                let copied = manifest?.attachments.filter { $0.status == .copied }
                let retry = listing?.notBefore.map { Int(($0.timeIntervalSince(now)).rounded(.up)) }
                entries.append(Entry(
                    shareId: shareID, stage: stage.rawValue,
                    attachments: copied?.count ?? listing?.attachments ?? 0,
                    bytes: copied.map { $0.reduce(0) { $0 + ($1.bytes ?? 0) } } ?? listing?.bytes ?? 0,
                    createdAt: manifest?.createdAt, ageSeconds: listing.map { secondsSince($0.createdAt, now: now) },
                    attempts: listing?.attempts ?? 0, lastCode: listing?.lastCode?.rawValue,
                    retryInSeconds: stage == .incoming ? retry.flatMap { $0 > 0 ? $0 : nil } : nil,
                    sourceApp: manifest?.sourceApp,
                    suggestedNames: manifest?.attachments.compactMap(\.suggestedName) ?? [],
                    reason: stage == .quarantine ? spool.quarantineMessage(shareID) : nil,
                    claimedBy: stage == .processing ? listing?.claimedBy : nil))
            }
        }
        return entries
    }

    private func printTable(_ entries: [Entry]) {
        // The claim holders column only with a ledger that records them (PostgreSQL: several hosts).
        let holders = entries.contains { $0.claimedBy != nil }
        let rows = entries.map { entry -> [String] in
            var attempts = String(entry.attempts)
            if let retry = entry.retryInSeconds { attempts += " (retry in \(formatAge(seconds: retry)))" }
            return [
                entry.stage, entry.shareId, String(entry.attachments), Output.formatBytes(entry.bytes),
                entry.ageSeconds.map { formatAge(seconds: $0) } ?? "-", attempts,
                entry.suggestedNames.isEmpty ? "-" : entry.suggestedNames.joined(separator: ", "),
            ] + (holders ? [entry.claimedBy ?? "-"] : [])
        }
        let header = ["STAGE", "SHARE", "FILES", "SIZE", "AGE", "ATTEMPTS", "NAMES"] + (holders ? ["CLAIMED BY"] : [])
        Output.write(Output.table(rows, header: header))
        let reasons = entries.compactMap { entry in entry.reason.map { (entry.shareId, $0) } }
        if !reasons.isEmpty {
            Output.line()
            Output.line(Output.styled("quarantined because:", .bold, for: .standardOutput))
            Output.write(Output.table(reasons.map { ["  " + $0.0, $0.1] }))
        }
    }
}
