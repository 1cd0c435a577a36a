/// `ledger.sqlite`, the embedded `ShareLedger`: one writer connection (WAL, `synchronous=FULL`, busy timeout), so
/// that every commit is durable before the file-system step it guards. The schema is versioned with `PRAGMA user_version`; `migrations[i]`
/// takes a database from version i to i + 1.
final class SQLiteLedger: ShareLedger {
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
        // v3: the contents of copies, for the duplicate check.
        contentsMigration,
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

    /// Appends one event row; call inside a transaction.
    static func append(
        _ event: LedgerEvent, shareID: String, attachment: Int? = nil, type: String? = nil, bytes: Int64? = nil,
        code: ShareError.Code? = nil, durationMilliseconds: Int64? = nil, at now: Int64,
        to connection: SQLiteDatabase.Connection
    ) throws {
        try connection.query(
            "INSERT INTO events (at, share_id, event, attachment, type, bytes, code, duration_ms) VALUES (?,?,?,?,?,?,?,?)",
            [
                .integer(now), .text(shareID), .text(event.rawValue), attachment.map { .integer(Int64($0)) } ?? .null,
                SQLiteValue(type), bytes.map { .integer($0) } ?? .null, SQLiteValue(code?.rawValue),
                durationMilliseconds.map { .integer($0) } ?? .null,
            ])
    }

    /// The one guarded update: `assignments` applied to the row of `shareID` only when its state is one of `from`.
    /// Returns the violation when it was not (the row is left alone).
    static func transition(
        _ shareID: String, from: [ShareState], set assignments: String, _ bindings: [SQLiteValue],
        on connection: SQLiteDatabase.Connection
    ) throws -> PreconditionViolation? {
        let states = from.map { "'\($0.rawValue)'" }.joined(separator: ",")
        try connection.query(
            "UPDATE shares SET \(assignments) WHERE id = ? AND state IN (\(states))", bindings + [.text(shareID)])
        guard connection.changes == 0 else { return nil }
        let found = try connection.query("SELECT state FROM shares WHERE id = ?", [.text(shareID)])
            .first?.first?.text.flatMap(ShareState.init(rawValue:))
        return PreconditionViolation(shareID: shareID, expected: from, found: found)
    }

    /// Inserts a share row and its attachment events.
    private static func insert(
        _ manifest: Manifest, state: ShareState, now: Int64, on connection: SQLiteDatabase.Connection
    ) throws {
        let copied = manifest.attachments.filter { $0.status == .copied }
        let bytes = copied.reduce(Int64(0)) { $0 + ($1.bytes ?? 0) }
        try connection.query(
            """
            INSERT INTO shares (id, source_app, created_at, state, attachments, bytes, updated_at)
            VALUES (?,?,?,?,?,?,?)
            """,
            [.text(manifest.shareId), SQLiteValue(manifest.sourceApp), .integer(now), .text(state.rawValue),
             .integer(Int64(copied.count)), .integer(bytes), .integer(now)])
        for attachment in manifest.attachments {
            try append(
                attachment.status == .copied ? .staged : .failed, shareID: manifest.shareId,
                attachment: attachment.index, type: attachment.typeIdentifier, bytes: attachment.bytes,
                code: attachment.error?.code, at: now, to: connection)
        }
    }

    func recordStaged(_ shares: [StagedRecord]) throws {
        guard !shares.isEmpty else { return }
        let now = LedgerClock.now()
        try database.transaction { connection in
            for share in shares {
                try Self.insert(share.manifest, state: .staged, now: now, on: connection)
                try Self.recordContents(of: share.manifest, now: now, on: connection)
                for source in share.sources {
                    try connection.query(
                        "INSERT INTO sources (share_id, device, inode, size, mtime, sha256, state) VALUES (?,?,?,?,?,?,?)",
                        [.text(share.manifest.shareId), .integer(Int64(bitPattern: source.device)),
                         .integer(Int64(bitPattern: source.inode)), .integer(source.size),
                         .integer(source.modificationTime), .text(source.sha256), "staged"])
                }
            }
        }
    }

    func recordPublished(_ shareIDs: [String], sourcesDone: [String]) throws -> [PreconditionViolation] {
        guard !shareIDs.isEmpty || !sourcesDone.isEmpty else { return [] }
        let now = LedgerClock.now()
        // Not durable: if a power cut loses it, recovery finds the shares in `incoming` and their sources recorded
        // staged, and rolls both forward.
        return try database.transaction(durable: false) { connection in
            var violations: [PreconditionViolation] = []
            for shareID in shareIDs {
                if let violation = try Self.transition(
                    shareID, from: [.staged], set: "state = 'published', updated_at = ?", [.integer(now)],
                    on: connection)
                {
                    // A consumer may claim (and finish) a share between its rename and this record.
                    if violation.found == nil || violation.found == .rejected { violations.append(violation) }
                } else {
                    try Self.append(.published, shareID: shareID, at: now, to: connection)
                }
            }
            for shareID in sourcesDone {
                try connection.query("UPDATE sources SET state = 'done' WHERE share_id = ?", [.text(shareID)])
            }
            return violations
        }
    }

    func recordRolledBack(_ manifest: Manifest, code: ShareError.Code?) throws {
        let now = LedgerClock.now()
        try database.transaction { connection in
            try Self.insert(manifest, state: .rejected, now: now, on: connection)
            try connection.query(
                "UPDATE shares SET last_code = ? WHERE id = ?", [SQLiteValue(code?.rawValue), .text(manifest.shareId)])
            try Self.append(.rejected, shareID: manifest.shareId, code: code, at: now, to: connection)
        }
    }

    func recordUnpublished(_ shareIDs: [String], code: ShareError.Code?) throws -> [PreconditionViolation] {
        let now = LedgerClock.now()
        return try database.transaction { connection in
            var violations: [PreconditionViolation] = []
            for shareID in shareIDs {
                if let violation = try Self.transition(
                    shareID, from: [.staged], set: "state = 'rejected', last_code = ?, updated_at = ?",
                    [SQLiteValue(code?.rawValue), .integer(now)], on: connection)
                {
                    violations.append(violation)
                    continue
                }
                try connection.query("DELETE FROM sources WHERE share_id = ?", [.text(shareID)])
                try Self.append(.rejected, shareID: shareID, code: code, at: now, to: connection)
            }
            return violations
        }
    }

    func stagedSources() throws -> [(shareID: String, identity: SourceIdentity)] {
        try stagedSources(where: "", [])
    }

    func stagedSources(device: UInt64, inode: UInt64) throws -> [(shareID: String, identity: SourceIdentity)] {
        try stagedSources(
            where: " AND device = ? AND inode = ?",
            [.integer(Int64(bitPattern: device)), .integer(Int64(bitPattern: inode))])
    }

    private func stagedSources(where condition: String, _ bindings: [SQLiteValue]) throws
        -> [(shareID: String, identity: SourceIdentity)]
    {
        try database.withConnection { connection in
            try connection.query(
                "SELECT share_id, device, inode, size, mtime, sha256 FROM sources WHERE state = 'staged'" + condition,
                bindings
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

    func markAllSourcesDone() throws {
        try database.transaction { connection in
            try connection.query("UPDATE sources SET state = 'done' WHERE state = 'staged'")
        }
    }

    func state(ofShare shareID: String) throws -> ShareState? {
        try database.withConnection { connection in
            try connection.query("SELECT state FROM shares WHERE id = ?", [.text(shareID)])
                .first?.first?.text.flatMap(ShareState.init(rawValue:))
        }
    }

    func shareIDs(inState state: ShareState) throws -> [String] {
        try database.withConnection { connection in
            try connection.query("SELECT id FROM shares WHERE state = ?", [.text(state.rawValue)])
                .compactMap { $0.first?.text }
        }
    }

    func pending() throws -> (shares: Int, bytes: Int64) {
        try database.withConnection { connection in
            let row = try connection.query(
                "SELECT COUNT(*), COALESCE(SUM(bytes), 0) FROM shares WHERE state IN ('staged', 'published', 'claimed')"
            ).first
            return (Int(row?[0].integer ?? 0), row?[1].integer ?? 0)
        }
    }
}
