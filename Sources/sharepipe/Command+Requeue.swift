import Foundation
import SharepipeCore

/// `sharepipe requeue SHARE-ID`: a quarantined share goes back to `incoming` with its attempts reset.
struct RequeueCommand: Command {
    static let name = "requeue"
    static let abstract = "Move a quarantined share back to incoming, its attempts reset."
    static let options: [any OptionDeclaration] = [ProcessorOptions.state] + LedgerOptions.all + [CommonOptions.json]
    static let positionals = [Positional("SHARE-ID", help: "The share's UUID, as \"sharepipe ls\" shows it.")]
    static let discussion = """
        The next consumer (a running daemon, or "sharepipe consume") processes it again with the same share and
        file ids. Exit status 1 when the share is not in quarantine (ERR_NOT_FOUND) or the state directory cannot be
        used (ERR_CONTAINER_UNAVAILABLE).
        """

    /// The JSON shape.
    struct Report: Encodable {
        var shareId: String
        var stage: String
    }

    let shareID: String
    let state: String
    let ledger: LedgerLocation
    let json: Bool

    init(arguments: ParsedArguments) throws {
        shareID = try ShareIDArgument.parse(arguments)
        state = ProcessorOptions.stateDirectory(arguments)
        ledger = try LedgerOptions.location(arguments)
        json = arguments[CommonOptions.json]
    }

    func run() throws -> ExitCode {
        let spool = try Spool.openExisting(root: state, ledger: ledger, faults: .fromEnvironment())
        guard spool.stage(ofShare: shareID) == .quarantine else {
            if let stage = spool.stage(ofShare: shareID) {
                throw ShareError(
                    .notFound, "share \(shareID) is in \(stage.rawValue), not in quarantine; nothing to requeue")
            }
            throw ShareError(.notFound, "no share \(shareID) in \(spool.root); \"sharepipe ls\" lists the shares")
        }
        try spool.requeue(shareID)
        if json {
            try Output.printJSON(Report(shareId: shareID, stage: Spool.Stage.incoming.rawValue))
        } else {
            Output.line("requeued \(shareID): back in incoming")
        }
        return .success
    }
}
