import SharepipeLedger
import SharepipeSystem

/// Where a spool's ledger lives: `--ledger sqlite|postgresql://…`.
public enum LedgerLocation: Sendable, Equatable {
    /// `STATE/ledger.sqlite`, embedded: daemons on one host.
    case sqlite
    /// A PostgreSQL database (a libpq URL; the `PG*` environment variables fill what it leaves out): daemons on
    /// several hosts sharing one state directory. `lease` is how long a claim lasts without its daemon's heartbeat.
    case postgresql(url: String, lease: Duration)

    /// How long a claim's lease lasts unless said otherwise.
    package static let defaultLease: Duration = .seconds(30)

    /// `sqlite`, or a `postgresql://` (or `postgres://`) URL; nil for anything else.
    package init?(_ text: String, lease: Duration = defaultLease) {
        if text == "sqlite" {
            self = .sqlite
        } else if text.hasPrefix("postgresql://") || text.hasPrefix("postgres://") {
            self = .postgresql(url: text, lease: lease)
        } else {
            return nil
        }
    }

    /// Opens (creating or migrating) the ledger of the spool at `root`; a ledger that cannot be used is
    /// ERR_CONTAINER_UNAVAILABLE naming `--ledger`.
    func open(root: String) throws -> LedgerStore {
        do {
            switch self {
            case .sqlite: return try LedgerStore(driver: SQLiteDriver(path: root + "/ledger.sqlite"))
            case .postgresql(let url, let lease):
                return try LedgerStore(driver: PostgresDriver(url: url, setting: "--ledger"), lease: lease)
            }
        } catch let error as ShareError {
            throw ShareError(.containerUnavailable, error.message)
        }
    }
}
