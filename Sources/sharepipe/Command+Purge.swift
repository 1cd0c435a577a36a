import SharepipeCore

extension ValueParser where Value == Duration {
    /// A non-negative duration with a unit: `500ms`, `30s`, `15m`, `12h`, `7d`, `2w`; a fraction such as `1.5h` too.
    static var duration: ValueParser<Duration> {
        ValueParser(placeholder: "DURATION") { text in
            let units: [(suffix: String, milliseconds: Double)] = [
                ("ms", 1), ("s", 1000), ("m", 60_000), ("h", 3_600_000), ("d", 86_400_000), ("w", 604_800_000),
            ]
            let lower = text.lowercased()
            guard let unit = units.first(where: { lower.hasSuffix($0.suffix) }),
                let number = Double(lower.dropLast(unit.suffix.count)), number.isFinite, number >= 0,
                lower.first?.isNumber == true, number * unit.milliseconds < 1e15
            else {
                throw ValidationError("expected a duration such as 30m, 12h or 7d, got \(text.debugDescription)")
            }
            return .milliseconds(Int64((number * unit.milliseconds).rounded()))
        }
    }
}

/// `sharepipe purge --quarantine | --rejected`: deletes quarantined shares or rejected inbox entries, all of them
/// or those older than a duration.
struct PurgeCommand: Command {
    static let quarantine = Flag("quarantine", help: "Delete quarantined shares.")
    static let olderThan = Option(
        "older-than", .duration,
        help: "Only what was quarantined or rejected at least this long ago, such as 12h or 7d (default: all).")

    static let name = "purge"
    static let abstract = "Delete quarantined shares or rejected drops, all of them or those older than a duration."
    static let options: [any OptionDeclaration] = [
        quarantine, RejectedOptions.rejected, olderThan, ProcessorOptions.state, RejectedOptions.inbox,
        RejectedOptions.config,
    ] + LedgerOptions.all + [CommonOptions.json]
    static let usage = "(--quarantine | --rejected) [--older-than DURATION] [options]"
    static let discussion = """
        --quarantine: the copies and reason.json of each share are deleted for good; the ledger keeps a record
        that they were. A running consumer also purges quarantined shares after a week. The state directory must
        exist (a missing one is ERR_CONTAINER_UNAVAILABLE, exit 1).

        --rejected: each entry of INBOX/.rejected/ and its .reason.json are deleted for good; the age counts from
        when the reason file was written. The daemon never empties this folder by itself.
        """

    /// The JSON shape: the share ids (--quarantine) or the entry names (--rejected) deleted.
    struct Report: Encodable {
        var purged: [String]
    }

    let olderThan: Duration?
    let state: String
    /// The inbox, with `--rejected`.
    let rejectedInbox: String?
    let ledger: LedgerLocation
    let json: Bool

    init(arguments: ParsedArguments) throws {
        let rejected = arguments[RejectedOptions.rejected]
        guard arguments[Self.quarantine] != rejected else {
            throw ValidationError(
                rejected ? "give --quarantine or --rejected, not both" : "missing --quarantine or --rejected")
        }
        olderThan = arguments[Self.olderThan]
        state = ProcessorOptions.stateDirectory(arguments)
        rejectedInbox = rejected ? try RejectedOptions.resolveInbox(arguments) : nil
        for option in [RejectedOptions.inbox, RejectedOptions.config]
        where !rejected && arguments.isSpecified(option) {
            throw ValidationError(option: option, "only used with --rejected")
        }
        ledger = try LedgerOptions.location(arguments)
        json = arguments[CommonOptions.json]
    }

    func run() throws -> ExitCode {
        if let rejectedInbox {
            let folder = RejectedFolder(inbox: rejectedInbox)
            let purged = try folder.purge(olderThan: olderThan)
            if json {
                try Output.printJSON(Report(purged: purged))
            } else {
                let left = try folder.entries().count
                let plural = purged.count == 1 ? "y" : "ies"
                Output.line("purged \(purged.count) rejected entr\(plural); \(left) left in \(folder.path)")
            }
            return .success
        }
        let spool = try Spool.openExisting(root: state, ledger: ledger, faults: .fromEnvironment())
        let purged = try spool.purgeQuarantine(olderThan: olderThan)
        if json {
            try Output.printJSON(Report(purged: purged))
        } else {
            let left = try spool.shareIDs(in: .quarantine).count
            let plural = purged.count == 1 ? "" : "s"
            Output.line("purged \(purged.count) quarantined share\(plural); \(left) left in quarantine")
        }
        return .success
    }
}
