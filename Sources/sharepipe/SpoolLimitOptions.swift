import SharepipeCore

/// The spool's back-pressure flags, declared once for the commands that ingest (`daemon`, `share`) and for `doctor`,
/// which reports them: free space kept on the state file system and the most shares and bytes left waiting. Past
/// any of them a new share is refused with `ERR_SPOOL_FULL` before anything is copied.
enum SpoolLimitOptions {
    private static let defaults = LoaderConfiguration()

    /// `--min-free SIZE`.
    static let minFree = Option(
        "min-free", .size, default: "64M",
        help: "Free space kept on the state file system (below it: ERR_SPOOL_FULL).")
    /// `--max-pending-shares N`.
    static let maxPendingShares = Option(
        "max-pending-shares", .positiveInteger, default: String(defaults.maxPendingShares),
        help: "Most published shares waiting (past it: ERR_SPOOL_FULL).")
    /// `--max-pending-bytes SIZE`.
    static let maxPendingBytes = Option(
        "max-pending-bytes", .size, default: "64G",
        help: "Most bytes in published shares waiting (past it: ERR_SPOOL_FULL).")

    static let all: [any OptionDeclaration] = [minFree, maxPendingShares, maxPendingBytes]

    /// Sets the limits the command line (or config file) gives.
    static func apply(_ arguments: ParsedArguments, to configuration: inout LoaderConfiguration) throws {
        configuration.minFreeBytes = try arguments.required(minFree)
        configuration.maxPendingShares = try arguments.required(maxPendingShares)
        configuration.maxPendingBytes = try arguments.required(maxPendingBytes)
    }
}
