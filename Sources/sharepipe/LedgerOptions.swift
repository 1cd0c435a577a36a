import SharepipeCore

/// `--ledger` and `--ledger-lease`, declared once for every command that reads or writes the ledger (and, through
/// the option names, the daemon's `ledger` and `ledger-lease` config keys).
enum LedgerOptions {
    /// `--ledger sqlite|postgresql://…`.
    static let ledger = Option(
        "ledger",
        ValueParser(placeholder: "sqlite|URL") { text in
            guard LedgerLocation(text) != nil else {
                throw ValidationError("expected sqlite or a postgresql:// URL, got \(text.debugDescription)")
            }
            return text
        },
        default: "sqlite",
        help: "The ledger: sqlite (STATE/ledger.sqlite), or a libpq postgresql:// URL shared by daemons on several "
            + "hosts; PG* environment variables fill in what the URL leaves out.")
    /// `--ledger-lease MS`, how long a PostgreSQL claim lasts without its daemon's heartbeat.
    static let lease = Option(
        "ledger-lease", .milliseconds, default: "30000",
        help: "With a PostgreSQL ledger: a claim whose daemon stops renewing it for this long is recovered by another.")

    /// Both options, in the order help lists them.
    static let all: [any OptionDeclaration] = [ledger, lease]

    /// The ledger the options name.
    static func location(_ arguments: ParsedArguments) throws -> LedgerLocation {
        let milliseconds = arguments[lease] ?? 30_000
        guard milliseconds > 0 else { throw ValidationError(option: lease, "expected more than 0 ms") }
        return LedgerLocation(arguments[ledger] ?? "sqlite", lease: .milliseconds(milliseconds)) ?? .sqlite
    }
}
