/// A lifecycle event recorded in the ledger.
enum LedgerEvent: String, Sendable, CaseIterable {
    case staged, published, claimed, processed, deleted, failed, retried, quarantined, rejected, recovered
}

/// The identity of an inbox source file, recorded with its share so a crash between publishing the share and
/// deleting the source cannot ingest the same file twice.
public struct SourceIdentity: Sendable, Equatable, Hashable {
    /// Device number.
    public var device: UInt64
    /// Inode number.
    public var inode: UInt64
    /// Size in bytes.
    public var size: Int64
    /// Modification time, nanoseconds since the epoch.
    public var modificationTime: Int64
    /// SHA-256 of the content, lowercase hex; the loader fills it in from the copy.
    public internal(set) var sha256: String

    /// Creates an identity.
    public init(device: UInt64, inode: UInt64, size: Int64, modificationTime: Int64, sha256: String = "") {
        self.device = device
        self.inode = inode
        self.size = size
        self.modificationTime = modificationTime
        self.sha256 = sha256
    }
}

/// `ledger.sqlite`: share records and lifecycle events with codes and sizes — never content, never file names.
///
/// One writer connection (WAL, busy timeout). The schema is versioned with `PRAGMA user_version`; `migrations[i]`
/// takes a database from version i to i + 1.
final class Ledger: Sendable {
    let database: SQLiteDatabase

    static let migrations: [String] = [
        """
        CREATE TABLE shares (
            id TEXT PRIMARY KEY,
            source_app TEXT,
            created_at INTEGER NOT NULL,
            state TEXT NOT NULL,
            attachments INTEGER NOT NULL DEFAULT 0,
            bytes INTEGER NOT NULL DEFAULT 0,
            attempts INTEGER NOT NULL DEFAULT 0,
            not_before INTEGER NOT NULL DEFAULT 0,
            last_code TEXT,
            updated_at INTEGER NOT NULL
        );
        CREATE INDEX shares_state ON shares(state);
        CREATE TABLE events (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            at INTEGER NOT NULL,
            share_id TEXT NOT NULL,
            event TEXT NOT NULL,
            attachment INTEGER,
            type TEXT,
            bytes INTEGER,
            code TEXT,
            duration_ms INTEGER
        );
        CREATE INDEX events_share ON events(share_id);
        CREATE INDEX events_at ON events(at);
        CREATE TABLE sources (
            share_id TEXT NOT NULL,
            device INTEGER NOT NULL,
            inode INTEGER NOT NULL,
            size INTEGER NOT NULL,
            mtime INTEGER NOT NULL,
            sha256 TEXT NOT NULL,
            state TEXT NOT NULL
        );
        CREATE INDEX sources_state ON sources(state);
        """,
        // v2: marking a share's sources done, and the latency of a processed share, look sources up by share.
        "CREATE INDEX sources_share ON sources(share_id);",
    ]

    /// Opens the ledger at `path`, creating and migrating it as needed.
    init(path: String) throws {
        database = try SQLiteDatabase(path: path)
        try database.transaction { connection in
            let version = try connection.query("PRAGMA user_version").first?.first?.integer ?? 0
            guard version <= Self.migrations.count else {
                throw ShareError(.containerUnavailable, "ledger schema version \(version) is newer than this sharepipe")
            }
            for step in Int(version)..<Self.migrations.count {
                try connection.execute(script: Self.migrations[step])
                try connection.execute(script: "PRAGMA user_version = \(step + 1)")
            }
        }
    }

    static func now() -> Int64 { System.wallClockNanoseconds() / 1_000_000 }

    /// Appends one event row; call inside a connection or transaction.
    static func append(
        _ event: LedgerEvent, shareID: String, attachment: Int? = nil, type: String? = nil, bytes: Int64? = nil,
        code: ShareError.Code? = nil, durationMilliseconds: Int64? = nil, to connection: SQLiteDatabase.Connection
    ) throws {
        try connection.query(
            "INSERT INTO events (at, share_id, event, attachment, type, bytes, code, duration_ms) VALUES (?,?,?,?,?,?,?,?)",
            [
                .integer(now()), .text(shareID), .text(event.rawValue), attachment.map { .integer(Int64($0)) } ?? .null,
                SQLiteValue(type), bytes.map { .integer($0) } ?? .null, SQLiteValue(code?.rawValue),
                durationMilliseconds.map { .integer($0) } ?? .null,
            ])
    }

    /// Publish step 3: the share, its attachment events and its source identities, committed together before the
    /// share is renamed into `incoming`.
    func recordStaged(_ manifest: Manifest, sources: [SourceIdentity]) throws {
        try database.transaction { connection in
            let copied = manifest.attachments.filter { $0.status == .copied }
            let bytes = copied.reduce(Int64(0)) { $0 + ($1.bytes ?? 0) }
            try connection.query(
                """
                INSERT INTO shares (id, source_app, created_at, state, attachments, bytes, updated_at)
                VALUES (?,?,?,?,?,?,?)
                """,
                [.text(manifest.shareId), SQLiteValue(manifest.sourceApp), .integer(Self.now()), "staged",
                 .integer(Int64(copied.count)), .integer(bytes), .integer(Self.now())])
            for attachment in manifest.attachments {
                try Self.append(
                    attachment.status == .copied ? .staged : .failed, shareID: manifest.shareId,
                    attachment: attachment.index, type: attachment.typeIdentifier, bytes: attachment.bytes,
                    code: attachment.error?.code, to: connection)
            }
            for source in sources {
                try connection.query(
                    "INSERT INTO sources (share_id, device, inode, size, mtime, sha256, state) VALUES (?,?,?,?,?,?,?)",
                    [.text(manifest.shareId), .integer(Int64(bitPattern: source.device)),
                     .integer(Int64(bitPattern: source.inode)), .integer(source.size),
                     .integer(source.modificationTime), .text(source.sha256), "staged"])
            }
        }
    }

    /// Publish step 4 done: the share is visible in `incoming`. Only a staged share becomes published, so a consumer
    /// that already claimed or processed it is never set back.
    func recordPublished(shareID: String) throws {
        try database.transaction { connection in
            try connection.query(
                "UPDATE shares SET state = 'published', updated_at = ? WHERE id = ? AND state = 'staged'",
                [.integer(Self.now()), .text(shareID)])
            try Self.append(.published, shareID: shareID, to: connection)
        }
    }

    /// A share that was staged but not published (rolled back or failed).
    func recordRejected(shareID: String, code: ShareError.Code?) throws {
        try database.transaction { connection in
            try connection.query(
                "UPDATE shares SET state = 'rejected', last_code = ?, updated_at = ? WHERE id = ?",
                [SQLiteValue(code?.rawValue), .integer(Self.now()), .text(shareID)])
            try connection.query("DELETE FROM sources WHERE share_id = ?", [.text(shareID)])
            try Self.append(.rejected, shareID: shareID, code: code, to: connection)
        }
    }

    /// Publish step 5 done: the inbox sources of the share are gone.
    func markSourcesDone(shareID: String) throws {
        try database.withConnection { connection in
            try connection.query("UPDATE sources SET state = 'done' WHERE share_id = ?", [.text(shareID)])
        }
    }

    /// Source identities still recorded as staged: the crash window between publish and source deletion.
    func stagedSources() throws -> [(shareID: String, identity: SourceIdentity)] {
        try database.withConnection { connection in
            try connection.query(
                "SELECT share_id, device, inode, size, mtime, sha256 FROM sources WHERE state = 'staged'"
            ).compactMap { row in
                guard let shareID = row[0].text, let device = row[1].integer, let inode = row[2].integer,
                    let size = row[3].integer, let mtime = row[4].integer, let sha256 = row[5].text
                else { return nil }
                let identity = SourceIdentity(
                    device: UInt64(bitPattern: device), inode: UInt64(bitPattern: inode), size: size,
                    modificationTime: mtime, sha256: sha256)
                return (shareID, identity)
            }
        }
    }

    /// Marks every staged source record done, once recovery has dealt with them.
    func markAllSourcesDone() throws {
        try database.withConnection { connection in
            try connection.query("UPDATE sources SET state = 'done' WHERE state = 'staged'")
        }
    }

    /// The recorded state of a share (`staged`, `published`, `processed` …), or nil when it is unknown.
    func state(ofShare shareID: String) throws -> String? {
        try database.withConnection { connection in
            try connection.query("SELECT state FROM shares WHERE id = ?", [.text(shareID)]).first?.first?.text
        }
    }

    func setState(_ state: String, shareID: String, event: LedgerEvent, code: ShareError.Code? = nil) throws {
        try database.transaction { connection in
            try connection.query(
                "UPDATE shares SET state = ?, last_code = COALESCE(?, last_code), updated_at = ? WHERE id = ?",
                [.text(state), SQLiteValue(code?.rawValue), .integer(Self.now()), .text(shareID)])
            try Self.append(event, shareID: shareID, code: code, to: connection)
        }
    }
}

extension Ledger {
    /// Shares staged, published or claimed and not yet processed, and their bytes.
    func pending() throws -> (shares: Int, bytes: Int64) {
        try database.withConnection { connection in
            let row = try connection.query(
                "SELECT COUNT(*), COALESCE(SUM(bytes), 0) FROM shares WHERE state IN ('staged', 'published', 'claimed')"
            ).first
            return (Int(row?[0].integer ?? 0), row?[1].integer ?? 0)
        }
    }
}
