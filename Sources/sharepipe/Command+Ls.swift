import Foundation
import SharepipeCore

/// The inbox whose `.rejected/` folder `ls --rejected` and `purge --rejected` work on: `--inbox`, else the one in
/// `--config` (read as the daemon reads it), else `./inbox`.
enum RejectedOptions {
    static let rejected = Flag("rejected", help: "Work on INBOX/.rejected/ (what the daemon could not ingest).")
    static let inbox = Option(
        "inbox", .path(placeholder: "DIR"), help: "With --rejected: the inbox (default: --config's, else ./inbox).")
    static let config = Option(
        "config", .path, help: "With --rejected: take the inbox from this daemon config file.")

    static func resolveInbox(_ arguments: ParsedArguments) throws -> String {
        if let inbox = arguments[inbox] { return inbox }
        guard let path = arguments[config] else { return "inbox" }
        let daemon = try ParsedArguments(parsing: ["--config=\(path)"], options: DaemonCommand.options, positionals: [])
        return try DaemonCommand.settings(daemon).configuration.inbox
    }
}

/// `sharepipe ls`: every unfinished share, stage by stage, with what its manifest and the ledger say about it; with
/// `--rejected`, the inbox entries the daemon could not ingest.
struct LsCommand: Command {
    static let name = "ls"
    static let abstract = "List the shares in staging, incoming, processing and quarantine, or rejected drops."
    static let options: [any OptionDeclaration] = [
        ProcessorOptions.state, RejectedOptions.rejected, RejectedOptions.inbox, RejectedOptions.config,
    ] + LedgerOptions.all + [CommonOptions.json]
    static let discussion = """
        One row per share directory, stage by stage, oldest first: attachments copied, bytes, age, processor
        attempts and the names of the copied attachments (the local operator's view: names come from the manifests
        and are shown here, never logged); failed attachments are counted, not named. Quarantined shares also show
        why they failed. The state directory must exist: ls never creates it (a missing one is
        ERR_CONTAINER_UNAVAILABLE, exit 1).

        With --rejected: one row per entry of INBOX/.rejected/, oldest rejection first, with its size, age, code
        and message from its .reason.json. A missing .rejected/ means nothing was rejected: an empty list.

        With a PostgreSQL --ledger, a share in processing also shows the daemon holding its claim
        (host:pid:boot-id).
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
        /// The share's title and tags, from its manifest (its text and userInfo: `show --json`).
        var title: String?
        var tags: [String]
        /// The suggested names of the copied attachments.
        var suggestedNames: [String]
        /// Attachments that failed to load (named nowhere here).
        var failed: Int
        /// The last attempt's error, for a quarantined share.
        var reason: String?
        /// Who holds the claim of a share in processing (host:pid:boot-id), with a PostgreSQL ledger.
        var claimedBy: String?
        /// The copied attachments flagged as duplicates (`--duplicates flag`), with their originals.
        var duplicates: [FlaggedCopy]

        /// A copy flagged as a duplicate.
        struct FlaggedCopy: Encodable {
            var index: Int
            var duplicateOf: DuplicateOrigin
        }

        enum CodingKeys: String, CodingKey {
            case shareId, stage, attachments, bytes, createdAt, ageSeconds, attempts, lastCode, retryInSeconds
            case sourceApp, title, tags, suggestedNames, failed, reason, claimedBy, duplicates
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
            try container.encode(title, forKey: .title)
            try container.encode(tags, forKey: .tags)
            try container.encode(suggestedNames, forKey: .suggestedNames)
            try container.encode(failed, forKey: .failed)
            try container.encode(reason, forKey: .reason)
            try container.encode(claimedBy, forKey: .claimedBy)
            try container.encode(duplicates, forKey: .duplicates)
        }
    }

    /// The JSON shape of `--rejected`: `{"rejected": [RejectedEntry]}`.
    struct RejectedReport: Encodable {
        var rejected: [RejectedEntry]
    }

    /// One rejected inbox entry; every key always present.
    struct RejectedEntry: Encodable {
        var name: String
        var kind: String
        var bytes: Int64
        var rejectedAt: String
        var ageSeconds: Int
        var code: String?
        var message: String?

        enum CodingKeys: String, CodingKey {
            case name, kind, bytes, rejectedAt, ageSeconds, code, message
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(name, forKey: .name)
            try container.encode(kind, forKey: .kind)
            try container.encode(bytes, forKey: .bytes)
            try container.encode(rejectedAt, forKey: .rejectedAt)
            try container.encode(ageSeconds, forKey: .ageSeconds)
            try container.encode(code, forKey: .code)
            try container.encode(message, forKey: .message)
        }
    }

    let state: String
    /// The inbox, with `--rejected`.
    let rejectedInbox: String?
    let ledger: LedgerLocation
    let json: Bool

    init(arguments: ParsedArguments) throws {
        state = ProcessorOptions.stateDirectory(arguments)
        rejectedInbox = arguments[RejectedOptions.rejected] ? try RejectedOptions.resolveInbox(arguments) : nil
        for option in [RejectedOptions.inbox, RejectedOptions.config]
        where rejectedInbox == nil && arguments.isSpecified(option) {
            throw ValidationError(option: option, "only used with --rejected")
        }
        ledger = try LedgerOptions.location(arguments)
        json = arguments[CommonOptions.json]
    }

    func run() throws -> ExitCode {
        if let rejectedInbox { return try listRejected(RejectedFolder(inbox: rejectedInbox)) }
        let spool = try Spool.openExisting(root: state, ledger: ledger)
        let entries = try Self.entries(spool)
        if json {
            try Output.printJSON(Report(shares: entries))
        } else if entries.isEmpty {
            Output.line("no shares in \(spool.root)")
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
                let failed = manifest?.attachments.filter { $0.status == .failed }.count ?? 0
                let retry = listing?.notBefore.map { Int(($0.timeIntervalSince(now)).rounded(.up)) }
                entries.append(Entry(
                    shareId: shareID, stage: stage.rawValue,
                    attachments: copied?.count ?? listing?.attachments ?? 0,
                    bytes: copied.map { $0.reduce(0) { $0 + ($1.bytes ?? 0) } } ?? listing?.bytes ?? 0,
                    createdAt: manifest?.createdAt, ageSeconds: listing.map { secondsSince($0.createdAt, now: now) },
                    attempts: listing?.attempts ?? 0, lastCode: listing?.lastCode?.rawValue,
                    retryInSeconds: stage == .incoming ? retry.flatMap { $0 > 0 ? $0 : nil } : nil,
                    sourceApp: manifest?.sourceApp, title: manifest?.details.title, tags: manifest?.details.tags ?? [],
                    suggestedNames: copied?.compactMap(\.suggestedName) ?? [], failed: failed,
                    reason: stage == .quarantine ? spool.quarantineMessage(shareID) : nil,
                    claimedBy: stage == .processing ? listing?.claimedBy : nil,
                    duplicates: copied?.compactMap { copy in
                        copy.duplicateOf.map { Entry.FlaggedCopy(index: copy.index, duplicateOf: $0) }
                    } ?? []))
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
            var names = entry.suggestedNames.map(displayName).joined(separator: ", ")
            if entry.failed > 0 { names += (names.isEmpty ? "" : " ") + "(+\(entry.failed) failed)" }
            if !entry.duplicates.isEmpty {
                let count = entry.duplicates.count
                names += (names.isEmpty ? "" : " ") + "(\(count) duplicate\(count == 1 ? "" : "s") of "
                    + Set(entry.duplicates.map(\.duplicateOf.shareId)).sorted().joined(separator: ", ") + ")"
            }
            return [
                entry.stage, entry.shareId, String(entry.attachments), Output.formatBytes(entry.bytes),
                entry.ageSeconds.map { formatAge(seconds: $0) } ?? "-", attempts, names.isEmpty ? "-" : names,
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

extension LsCommand {
    private func listRejected(_ folder: RejectedFolder) throws -> ExitCode {
        let now = Date()
        let entries = try folder.entries().map { entry in
            RejectedEntry(
                name: entry.name, kind: entry.isFolder ? "folder" : "file", bytes: entry.bytes,
                rejectedAt: entry.rejectedAtText, ageSeconds: secondsSince(entry.rejectedAt, now: now),
                code: entry.code, message: entry.message)
        }
        if json {
            try Output.printJSON(RejectedReport(rejected: entries))
        } else if entries.isEmpty {
            Output.line("nothing rejected in \(folder.path)")
        } else {
            let rows = entries.map { entry in
                [
                    displayName(entry.name) + (entry.kind == "folder" ? "/" : ""), Output.formatBytes(entry.bytes),
                    formatAge(seconds: entry.ageSeconds), entry.code ?? "-", entry.message ?? "(no reason file)",
                ]
            }
            Output.write(Output.table(rows, header: ["NAME", "SIZE", "AGE", "CODE", "MESSAGE"]))
        }
        return .success
    }
}

/// A file name fit for one table cell: control characters (a newline in a name) shown as `?`.
func displayName(_ name: String) -> String {
    String(String.UnicodeScalarView(name.unicodeScalars.map {
        $0.properties.generalCategory == .control ? "?" : $0
    }))
}
