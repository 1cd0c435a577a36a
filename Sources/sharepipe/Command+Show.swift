import Foundation
import SharepipeCore

/// `sharepipe show SHARE-ID`: one share's timeline from the ledger and where its copies are now.
struct ShowCommand: Command {
    static let name = "show"
    static let abstract = "Show one share's timeline: every event with its attempt and code, and where its copies are."
    static let logNames = Flag(
        "log-names", help: "Also show the attachments' suggested names (from the manifest, while the copies exist).")
    static let options: [any OptionDeclaration] =
        [ProcessorOptions.state, logNames] + LedgerOptions.all + [CommonOptions.json]
    static let positionals = [
        Positional("SHARE-ID", help: "The share's UUID, as a receipt or \"sharepipe ls\" gives it.")
    ]
    static let discussion = """
        Every event the ledger kept for the share (30 days by default), oldest first: time (UTC), event, processor \
        attempt, attachment, type identifier, bytes, error code and duration. The ledger holds no file names; with \
        --log-names the suggested names are read from the share's manifest while its copies exist. A share the \
        ledger and the spool do not know is ERR_NOT_FOUND, exit 1; with --json the error is also printed on stdout \
        as {"error": {"code", "message"}}.
        """

    /// The JSON shape; every key always present.
    struct Report: Encodable {
        /// Where the copies are now.
        struct Location: Encodable {
            var stage: String?
            var path: String?
            var description: String
            var copies: [Copy]
        }

        /// One copy in the share directory.
        struct Copy: Encodable {
            var index: Int
            var fileId: String
            var file: String
            var typeIdentifier: String?
            var bytes: Int64?
            var suggestedName: String?
        }

        var shareId: String
        var state: String?
        var sourceApp: String?
        var createdAt: String?
        var attachments: Int?
        var bytes: Int64?
        var attempts: Int?
        var lastCode: String?
        var location: Location
        /// The attachments whose content duplicates an earlier copy: flagged, or refused with ERR_DUPLICATE.
        var duplicates: [Duplicate]
        var events: [EventLine]

        /// One duplicate attachment and its original.
        struct Duplicate: Encodable {
            var index: Int
            /// `flagged` (ingested) or `rejected` (ERR_DUPLICATE).
            var outcome: String
            var duplicateOf: DuplicateOrigin
        }

        enum CodingKeys: String, CodingKey {
            case shareId, state, sourceApp, createdAt, attachments, bytes, attempts, lastCode, location, duplicates
            case events
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(shareId, forKey: .shareId)
            try container.encode(state, forKey: .state)
            try container.encode(sourceApp, forKey: .sourceApp)
            try container.encode(createdAt, forKey: .createdAt)
            try container.encode(attachments, forKey: .attachments)
            try container.encode(bytes, forKey: .bytes)
            try container.encode(attempts, forKey: .attempts)
            try container.encode(lastCode, forKey: .lastCode)
            try container.encode(location, forKey: .location)
            try container.encode(duplicates, forKey: .duplicates)
            try container.encode(events, forKey: .events)
        }
    }

    let shareID: String
    let state: String
    let ledger: LedgerLocation
    let names: Bool
    let json: Bool

    init(arguments: ParsedArguments) throws {
        shareID = try ShareIDArgument.parse(arguments)
        state = ProcessorOptions.stateDirectory(arguments)
        ledger = try LedgerOptions.location(arguments)
        names = arguments[Self.logNames]
        json = arguments[CommonOptions.json]
    }

    func run() throws -> ExitCode {
        do {
            let report = try report()
            if json {
                try Output.printJSON(report)
            } else {
                printReport(report)
            }
            return .success
        } catch let error as ShareError {
            return reportFailure(error, json: json)
        }
    }

    private func report() throws -> Report {
        try Self.report(spool: try Spool.openExisting(root: state, ledger: ledger), shareID: shareID, names: names)
    }

    /// The report of one share of `spool` (also the body of the daemon's `GET /v1/shares/ID`).
    static func report(spool: Spool, shareID: String, names: Bool) throws -> Report {
        let record = try spool.shareRecord(shareID)
        let events = try spool.timeline(ofShare: shareID)
        let stage = spool.stage(ofShare: shareID)
        guard record != nil || !events.isEmpty || stage != nil else {
            throw ShareError(.notFound, "no share \(shareID) in the ledger or the spool of \(spool.root)")
        }
        return Report(
            shareId: shareID, state: record?.state, sourceApp: record?.sourceApp,
            createdAt: record.map { EventLine.timestamp($0.createdAt) }, attachments: record?.attachments,
            bytes: record?.bytes, attempts: record?.attempts, lastCode: record?.lastCode,
            location: location(spool, shareID: shareID, names: names, stage: stage, state: record?.state),
            duplicates: try spool.duplicates(ofShare: shareID).map { duplicate in
                Report.Duplicate(
                    index: duplicate.index, outcome: duplicate.rejected ? "rejected" : "flagged",
                    duplicateOf: duplicate.origin)
            },
            events: events.map(EventLine.init))
    }

    private static func location(_ spool: Spool, shareID: String, names: Bool, stage: Spool.Stage?, state: String?)
        -> Report.Location
    {
        guard let stage else {
            let description = switch state {
            case "processed": "deleted after processing"
            case "purged": "deleted: purged from quarantine"
            case "rejected": "none: the share was never published"
            default: "no stage directory holds the share"
            }
            return Report.Location(stage: nil, path: nil, description: description, copies: [])
        }
        let path = spool.path(stage, shareID)
        let manifest = try? spool.manifest(stage, shareID)
        let copies = (manifest?.attachments ?? []).compactMap { record -> Report.Copy? in
            guard record.status == .copied, let fileId = record.fileId, let file = record.file else { return nil }
            return Report.Copy(
                index: record.index, fileId: fileId, file: file, typeIdentifier: record.typeIdentifier,
                bytes: record.bytes, suggestedName: names ? record.suggestedName : nil)
        }
        let count = copies.count == 1 ? "1 copy" : "\(copies.count) copies"
        return Report.Location(stage: stage.rawValue, path: path, description: "in \(stage.rawValue), \(count)",
            copies: copies)
    }

    private func printReport(_ report: Report) {
        var rows = [
            ["share", report.shareId],
            ["state", report.state ?? "unknown to the ledger"],
            ["source app", report.sourceApp ?? "-"],
            ["created", report.createdAt ?? "-"],
        ]
        if let attachments = report.attachments, let bytes = report.bytes {
            let plural = attachments == 1 ? "" : "s"
            rows.append(["copied", "\(attachments) attachment\(plural), \(Output.formatBytes(bytes))"])
        }
        rows.append(["attempts", report.attempts.map(String.init) ?? "-"])
        if let code = report.lastCode { rows.append(["last code", code]) }
        rows.append(["copies", report.location.description + (report.location.path.map { ": " + $0 } ?? "")])
        var text = Output.table(rows)
        if !report.location.copies.isEmpty {
            let copies = report.location.copies.map { copy in
                [String(copy.index), copy.file, copy.typeIdentifier ?? "-", copy.bytes.map(Output.formatBytes) ?? "-"]
                    + (names ? [copy.suggestedName ?? "-"] : [])
            }
            let header = ["#", "copy", "type", "size"] + (names ? ["name"] : [])
            text += "\n" + Output.table(copies, header: header.map { Output.styled($0, .bold, for: .standardOutput) })
        }
        if !report.duplicates.isEmpty {
            let rows = report.duplicates.map { duplicate in
                [String(duplicate.index), duplicate.outcome, duplicate.duplicateOf.shareId,
                 duplicate.duplicateOf.fileId, duplicate.duplicateOf.createdAt]
            }
            let header = ["#", "duplicate", "original share", "original file", "ingested"]
            text += "\n" + Output.table(rows, header: header.map { Output.styled($0, .bold, for: .standardOutput) })
        }
        let header = ["time", "event", "attempt", "#", "type", "bytes", "code", "duration"]
        let events = report.events.map { event -> [String] in
            let attempt: String = event.attempt.map { String($0) } ?? "-"
            let attachment: String = event.attachment.map { String($0) } ?? "-"
            let bytes: String = event.bytes.map { String($0) } ?? "-"
            let duration: String = event.durationMs.map { "\($0) ms" } ?? "-"
            return [
                event.time, event.event, attempt, attachment, event.typeIdentifier ?? "-", bytes, event.code ?? "-",
                duration,
            ]
        }
        text += "\n" + Output.table(events, header: header.map { Output.styled($0, .bold, for: .standardOutput) })
        Output.write(text)
    }
}

/// One ledger event as `show` and `events` print it; `null` keys are kept in JSON so every line has one shape.
struct EventLine: Encodable {
    var sequence: Int64
    var time: String
    var shareId: String
    var event: String
    var attempt: Int?
    var attachment: Int?
    var typeIdentifier: String?
    var bytes: Int64?
    var code: String?
    var durationMs: Int64?

    init(_ event: TimelineEvent) {
        sequence = event.sequence
        time = Self.timestamp(event.time)
        shareId = event.shareId
        self.event = event.event
        attempt = event.attempt
        attachment = event.attachment
        typeIdentifier = event.typeIdentifier
        bytes = event.bytes
        code = event.code
        durationMs = event.durationMilliseconds
    }

    enum CodingKeys: String, CodingKey {
        case sequence, time, shareId, event, attempt, attachment, typeIdentifier, bytes, code, durationMs
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(sequence, forKey: .sequence)
        try container.encode(time, forKey: .time)
        try container.encode(shareId, forKey: .shareId)
        try container.encode(event, forKey: .event)
        try container.encode(attempt, forKey: .attempt)
        try container.encode(attachment, forKey: .attachment)
        try container.encode(typeIdentifier, forKey: .typeIdentifier)
        try container.encode(bytes, forKey: .bytes)
        try container.encode(code, forKey: .code)
        try container.encode(durationMs, forKey: .durationMs)
    }

    /// RFC 3339 in UTC with milliseconds, from milliseconds since the epoch.
    static func timestamp(_ milliseconds: Int64) -> String {
        Date(timeIntervalSince1970: Double(milliseconds) / 1000)
            .formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }

    /// One logfmt line: `time=… seq=… share=… event=…`, then the keys that have a value.
    var logfmt: String {
        var fields = ["time=\(time)", "seq=\(sequence)", "share=\(shareId)", "event=\(event)"]
        if let attempt { fields.append("attempt=\(attempt)") }
        if let attachment { fields.append("attachment=\(attachment)") }
        if let typeIdentifier { fields.append("type=\(typeIdentifier)") }
        if let bytes { fields.append("bytes=\(bytes)") }
        if let code { fields.append("code=\(code)") }
        if let durationMs { fields.append("duration_ms=\(durationMs)") }
        return fields.joined(separator: " ")
    }
}

/// A failure of `show`, `events` or `matrix`: `error: CODE: message` on stderr and, with `--json`, also
/// `{"error": {"code", "message"}}` on stdout; exit 1.
func reportFailure(_ error: ShareError, json: Bool) -> ExitCode {
    struct Body: Encodable {
        struct Detail: Encodable {
            var code: String
            var message: String
        }

        var error: Detail
    }
    Output.printError("\(error.code.rawValue): \(error.message)")
    if json {
        try? Output.printJSON(Body(error: .init(code: error.code.rawValue, message: error.message)))
    }
    return .failure
}
