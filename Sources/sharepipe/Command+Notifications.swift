import Foundation
import SharepipeCore

/// `sharepipe notifications ls|retry` (issue 33): the webhook outbox of the ledger.
struct NotificationsCommand: CommandGroup {
    static let name = "notifications"
    static let abstract = "List webhook deliveries pending or failed; retry failed ones."
    static let subcommands: [any CommandNode.Type] = [NotificationsLsCommand.self, NotificationsRetryCommand.self]
}

/// `sharepipe notifications ls`.
struct NotificationsLsCommand: Command {
    static let name = "ls"
    static let abstract = "List webhook deliveries not yet acknowledged: pending, and failed after --notify-max-age."
    static let options: [any OptionDeclaration] = [ProcessorOptions.state] + LedgerOptions.all + [
        only, limit, CommonOptions.json,
    ]
    static let discussion = """
        One row per event and receiver: the event id (the webhook-id header), its type and share, the receiver, the
        attempts made, and the last answer (an HTTP status, or why there was none). --json prints an array.
        """
    static let only = Option(
        "only", .choice(NotificationState.allCases.map(\.rawValue)),
        help: "Only deliveries in this state (default: pending and failed).")
    static let limit = Option("limit", .positiveInteger, default: "1000", help: "List at most N.")

    let stateDirectory: String
    let ledger: LedgerLocation
    let states: [NotificationState]
    let limit: Int
    let json: Bool

    init(arguments: ParsedArguments) throws {
        stateDirectory = ProcessorOptions.stateDirectory(arguments)
        ledger = try LedgerOptions.location(arguments)
        states = arguments[Self.only].flatMap(NotificationState.init(rawValue:)).map { [$0] } ?? [.pending, .failed]
        limit = try arguments.required(Self.limit)
        json = arguments[CommonOptions.json]
    }

    func run() throws -> ExitCode {
        let spool = try Spool.openExisting(root: stateDirectory, ledger: ledger)
        let records = try spool.notifications(states: states, limit: limit)
        if json {
            try Output.printJSON(records)
            return .success
        }
        guard !records.isEmpty else {
            Output.line("no deliveries \(states.map(\.rawValue).joined(separator: " or "))")
            return .success
        }
        let rows = records.map { record -> [String] in
            let last = record.lastStatus.map { $0 == 0 ? (record.lastError ?? "-") : "HTTP \($0)" } ?? "-"
            return [record.id, record.type, record.shareId, record.state, String(record.attempts), last, record.url]
        }
        Output.write(Output.table(rows, header: ["EVENT", "TYPE", "SHARE", "STATE", "ATTEMPTS", "LAST", "URL"]))
        return .success
    }
}

/// `sharepipe notifications retry`.
struct NotificationsRetryCommand: Command {
    static let name = "retry"
    static let abstract = "Deliver failed webhook events again, with a fresh --notify-max-age."
    static let options: [any OptionDeclaration] = [ProcessorOptions.state] + LedgerOptions.all + [CommonOptions.json]
    static let positionals = [
        Positional(
            "EVENT-ID", .zeroOrMore, help: "Event ids as \"notifications ls\" shows them; none: every failed one."),
    ]
    static let discussion = """
        A running daemon with --notify delivers them at once (same event ids, so receivers can tell a repeat).
        Exit status 1 (ERR_NOT_FOUND) when an EVENT-ID given names no failed delivery.
        """

    /// The JSON shape.
    struct Report: Encodable {
        var retried: Int
    }

    let stateDirectory: String
    let ledger: LedgerLocation
    let ids: [String]
    let json: Bool

    init(arguments: ParsedArguments) throws {
        stateDirectory = ProcessorOptions.stateDirectory(arguments)
        ledger = try LedgerOptions.location(arguments)
        ids = arguments.positionals.map { $0.lowercased() }
        json = arguments[CommonOptions.json]
    }

    func run() throws -> ExitCode {
        let spool = try Spool.openExisting(root: stateDirectory, ledger: ledger)
        let retried = try spool.retryNotifications(ids: ids.isEmpty ? nil : ids)
        if !ids.isEmpty && retried == 0 {
            throw ShareError(.notFound, "no failed delivery with the given event ids; \"notifications ls\" lists them")
        }
        if json {
            try Output.printJSON(Report(retried: retried))
        } else {
            Output.line("retried \(retried) deliver\(retried == 1 ? "y" : "ies")")
        }
        return .success
    }
}
