import SharepipeCore

/// The duplicate check's flags (issue 21), declared once for the commands that ingest (`daemon`, `share`).
enum DuplicateOptions {
    private static let defaults = LoaderConfiguration()

    /// The longest window: the ledger keeps the contents of copies as long as its events (30 days), so a longer
    /// window would silently see less than it says.
    static let longestWindow: Duration = .seconds(30 * 86_400)

    /// `--duplicates accept|flag|reject`.
    static let duplicates = Option(
        "duplicates", .choice(DuplicatePolicy.self), default: defaults.duplicates.rawValue,
        help: "What an attachment whose content was ingested within --duplicate-window gets: accept it, flag it "
            + "(naming the original) or reject it (ERR_DUPLICATE).")
    /// `--duplicate-window DURATION`.
    static let duplicateWindow = Option(
        "duplicate-window", .duration, default: "30d",
        help: "How far back a copy counts as the original, such as 12h or 7d (at most 30d).")

    static let all: [any OptionDeclaration] = [duplicates, duplicateWindow]

    /// Sets the policy and window the command line (or config file) gives.
    static func apply(_ arguments: ParsedArguments, to configuration: inout LoaderConfiguration) throws {
        configuration.duplicates = try arguments.required(duplicates)
        let window = try arguments.required(duplicateWindow)
        guard window > .zero, window <= longestWindow else {
            throw ValidationError(
                option: duplicateWindow,
                "must be more than 0 and at most 30d: the ledger keeps the contents of copies for 30 days")
        }
        configuration.duplicateWindow = window
    }
}
