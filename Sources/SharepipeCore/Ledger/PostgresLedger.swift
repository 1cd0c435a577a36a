import Foundation
import Synchronization

/// The ledger in PostgreSQL, shared by daemons on several hosts: the same tables, columns and events as
/// `SQLiteLedger`, plus a lease on every claim.
///
/// Every transition is one guarded `UPDATE … WHERE id = ANY($ids) AND state = ANY($from)` whose returned rows say
/// which shares it applied to; a batch of shares and its events is one statement (data-modifying CTEs over
/// `unnest`ed arrays), so a batch costs one round trip, plus one more only when some share was not in a state the
/// transition starts from. Times are the client's clock (as in SQLite), except leases, which use the server's
/// clock so that clock skew between hosts cannot expire a live claim.
///
/// Claims across hosts: a claim records `claimed_by` (host:pid:boot-id) and `lease_until`, renewed by a heartbeat
/// thread while the process lives; the consumer's transitions out of `claimed` apply only to the claimer's own
/// rows. A claim whose lease expired is picked by another daemon (`FOR UPDATE SKIP LOCKED`, so two daemons never
/// pick the same one), which recovers it if the claim's `flock` on `processing/S` is free.
final class PostgresLedger: ShareLedger {
    let connection: PostgresConnection
    /// Who holds the claims this ledger records: host:pid:boot-id.
    let owner: String
    /// How long a claim lasts without a heartbeat.
    let lease: Duration
    /// The thread renewing this process's leases, started by the first claim.
    let heartbeat = Mutex<Thread?>(nil)

    /// Serializes schema migrations of every sharepipe ledger in the database ("sharepip" in ASCII).
    static let migrationLock: Int64 = 0x7368_6172_6570_6970

    /// The server's clock, in ms since the epoch.
    static let serverNow = "(extract(epoch from clock_timestamp()) * 1000)::bigint"

    /// `migrations[i]` takes a database from version i to i + 1; each is a list of single statements.
    static let migrations: [[String]] = [
        [
            """
            CREATE TABLE shares (
                id TEXT PRIMARY KEY,
                source_app TEXT,
                created_at BIGINT NOT NULL,
                state TEXT NOT NULL,
                attachments INTEGER NOT NULL DEFAULT 0,
                bytes BIGINT NOT NULL DEFAULT 0,
                attempts INTEGER NOT NULL DEFAULT 0,
                not_before BIGINT NOT NULL DEFAULT 0,
                last_code TEXT,
                updated_at BIGINT NOT NULL
            )
            """,
            "CREATE INDEX shares_state ON shares(state)",
            """
            CREATE TABLE events (
                seq BIGSERIAL PRIMARY KEY,
                at BIGINT NOT NULL,
                share_id TEXT NOT NULL,
                event TEXT NOT NULL,
                attachment INTEGER,
                type TEXT,
                bytes BIGINT,
                code TEXT,
                duration_ms BIGINT
            )
            """,
            "CREATE INDEX events_share ON events(share_id)",
            "CREATE INDEX events_at ON events(at)",
            """
            CREATE TABLE sources (
                share_id TEXT NOT NULL,
                device BIGINT NOT NULL,
                inode BIGINT NOT NULL,
                size BIGINT NOT NULL,
                mtime BIGINT NOT NULL,
                sha256 TEXT NOT NULL,
                state TEXT NOT NULL
            )
            """,
            "CREATE INDEX sources_state ON sources(state)",
        ],
        // v2, as in SQLite: sources looked up by share.
        ["CREATE INDEX sources_share ON sources(share_id)"],
        // v3: leases on claims, for daemons on several hosts.
        [
            "ALTER TABLE shares ADD COLUMN claimed_by TEXT, ADD COLUMN lease_until BIGINT",
            "CREATE INDEX shares_lease ON shares(lease_until) WHERE state = 'claimed'",
        ],
        // v4: the contents of copies, for the duplicate check.
        contentsMigration,
    ]

    /// Who this process is, for `claimed_by`: host:pid:boot-id.
    static func currentOwner() -> String {
        "\(System.hostName()):\(System.processID):\(System.bootID())"
    }

    /// Connects to `url` and brings the schema up to date under an advisory lock, so daemons starting together
    /// migrate once. A database whose schema is newer than this sharepipe is refused.
    init(url: String, setting: String = "--ledger", lease: Duration = .seconds(30), owner: String = currentOwner())
        throws
    {
        connection = try PostgresConnection(url: url, setting: setting)
        self.owner = owner
        self.lease = lease
        try Self.migrate(connection, to: Self.migrations.count)
    }

    deinit {
        heartbeat.withLock { $0?.cancel() }
    }

    /// Applies the migrations up to `version` (tests stop early to build an older schema).
    static func migrate(_ connection: PostgresConnection, to version: Int) throws {
        try connection.transaction { session in
            try session.query("SELECT pg_advisory_xact_lock($1)", [String(migrationLock)])
            try session.query("CREATE TABLE IF NOT EXISTS sharepipe_schema (version INTEGER NOT NULL)")
            let current = try session.query("SELECT version FROM sharepipe_schema").scalar.flatMap { Int($0) }
            if current == nil { try session.query("INSERT INTO sharepipe_schema (version) VALUES (0)") }
            let found = current ?? 0
            guard found <= migrations.count else {
                throw ShareError(
                    .containerUnavailable,
                    "ledger \(connection.target) has schema version \(found), newer than this sharepipe's "
                        + "\(migrations.count)")
            }
            guard found < version else { return }
            for step in found..<version {
                for statement in migrations[step] { try session.query(statement) }
            }
            try session.query("UPDATE sharepipe_schema SET version = $1", [String(version)])
        }
    }

    /// The schema version recorded in the database, 0 when it has none.
    static func schemaVersion(_ connection: PostgresConnection) throws -> Int {
        try connection.withSession { session in
            let exists = try session.query("SELECT to_regclass('sharepipe_schema') IS NOT NULL").scalar == "t"
            guard exists else { return 0 }
            return Int(try session.query("SELECT version FROM sharepipe_schema").scalar ?? "0") ?? 0
        }
    }

    // MARK: Publish

    func recordStaged(_ shares: [StagedRecord]) throws {
        guard !shares.isEmpty else { return }
        let now = String(LedgerClock.now())
        var rows = Columns(4)
        var events = Columns(6)
        var sources = Columns(6)
        var contents = Columns(8)
        for share in shares {
            contents.append(contentsOf: Self.contentColumns(share.manifest, now: LedgerClock.now()))
            let manifest = share.manifest
            let copied = manifest.attachments.filter { $0.status == .copied }
            rows.append([
                manifest.shareId, manifest.sourceApp, String(copied.count),
                String(copied.reduce(Int64(0)) { $0 + ($1.bytes ?? 0) }),
            ])
            events.append(contentsOf: Self.attachmentEvents(manifest))
            for source in share.sources {
                sources.append([
                    manifest.shareId, String(Int64(bitPattern: source.device)),
                    String(Int64(bitPattern: source.inode)), String(source.size), String(source.modificationTime),
                    source.sha256,
                ])
            }
        }
        try connection.withSession { session in
            try session.query(
                """
                WITH s AS (
                    INSERT INTO shares (id, source_app, created_at, state, attachments, bytes, updated_at)
                    SELECT id, app, $1, 'staged', n, b, $1
                    FROM unnest($2::text[], $3::text[], $4::int[], $5::bigint[]) AS t(id, app, n, b)
                ), e AS (
                    INSERT INTO events (at, share_id, event, attachment, type, bytes, code)
                    SELECT $1, id, ev, a, ty, b, c
                    FROM unnest($6::text[], $7::text[], $8::int[], $9::text[], $10::bigint[], $11::text[])
                        AS t(id, ev, a, ty, b, c)
                ), c AS (
                    -- The copies no duplicate check reserved (--duplicates accept), so that a later check finds them.
                    INSERT INTO contents (share_id, attachment, sha256, file_id, created_at, original_share,
                        original_file, original_at)
                    SELECT id, a, h, f, at, os, ofile, oat
                    FROM unnest($18::text[], $19::int[], $20::text[], $21::text[], $22::bigint[], $23::text[],
                        $24::text[], $25::bigint[]) AS t(id, a, h, f, at, os, ofile, oat)
                    WHERE NOT EXISTS (SELECT 1 FROM contents WHERE share_id = t.id)
                )
                INSERT INTO sources (share_id, device, inode, size, mtime, sha256, state)
                SELECT id, d, i, sz, m, h, 'staged'
                FROM unnest($12::text[], $13::bigint[], $14::bigint[], $15::bigint[], $16::bigint[], $17::text[])
                    AS t(id, d, i, sz, m, h)
                """,
                [now] + rows.arrays + events.arrays + sources.arrays + contents.arrays)
        }
    }

    func recordPublished(_ shareIDs: [String], sourcesDone: [String]) throws -> [PreconditionViolation] {
        guard !shareIDs.isEmpty || !sourcesDone.isEmpty else { return [] }
        let violations = try connection.withSession { session in
            let updated = try session.query(
                """
                WITH u AS (
                    UPDATE shares SET state = 'published', updated_at = $1
                    WHERE id = ANY($2::text[]) AND state = 'staged' RETURNING id
                ), e AS (
                    INSERT INTO events (at, share_id, event) SELECT $1, id, 'published' FROM u
                ), d AS (
                    UPDATE sources SET state = 'done' WHERE share_id = ANY($3::text[])
                )
                SELECT id FROM u
                """,
                [String(LedgerClock.now()), pgArray(shareIDs), pgArray(sourcesDone)])
            return try Self.violations(shareIDs, applied: updated, from: [.staged], in: session)
        }
        // A consumer may claim (and finish) a share between its rename and this record.
        return violations.filter { $0.found == nil || $0.found == .rejected }
    }

    func recordRolledBack(_ manifest: Manifest, code: ShareError.Code?) throws {
        let copied = manifest.attachments.filter { $0.status == .copied }
        var events = Columns(6)
        events.append(contentsOf: Self.attachmentEvents(manifest))
        events.append([manifest.shareId, LedgerEvent.rejected.rawValue, nil, nil, nil, code?.rawValue])
        try connection.withSession { session in
            try session.query(
                """
                WITH s AS (
                    INSERT INTO shares (id, source_app, created_at, state, attachments, bytes, last_code, updated_at)
                    VALUES ($2, $3, $1, 'rejected', $4, $5, $6, $1)
                )
                INSERT INTO events (at, share_id, event, attachment, type, bytes, code)
                SELECT $1, id, ev, a, ty, b, c
                FROM unnest($7::text[], $8::text[], $9::int[], $10::text[], $11::bigint[], $12::text[])
                    AS t(id, ev, a, ty, b, c)
                """,
                [String(LedgerClock.now()), manifest.shareId, manifest.sourceApp, String(copied.count),
                 String(copied.reduce(Int64(0)) { $0 + ($1.bytes ?? 0) }), code?.rawValue] + events.arrays)
        }
    }

    func recordUnpublished(_ shareIDs: [String], code: ShareError.Code?) throws -> [PreconditionViolation] {
        guard !shareIDs.isEmpty else { return [] }
        return try connection.withSession { session in
            let updated = try session.query(
                """
                WITH u AS (
                    UPDATE shares SET state = 'rejected', last_code = $3, updated_at = $1
                    WHERE id = ANY($2::text[]) AND state = 'staged' RETURNING id
                ), e AS (
                    INSERT INTO events (at, share_id, event, code) SELECT $1, id, 'rejected', $3 FROM u
                ), d AS (
                    DELETE FROM sources WHERE share_id IN (SELECT id FROM u)
                )
                SELECT id FROM u
                """,
                [String(LedgerClock.now()), pgArray(shareIDs), code?.rawValue])
            return try Self.violations(shareIDs, applied: updated, from: [.staged], in: session)
        }
    }

    func stagedSources() throws -> [(shareID: String, identity: SourceIdentity)] {
        try stagedSources(where: "", [])
    }

    func stagedSources(device: UInt64, inode: UInt64) throws -> [(shareID: String, identity: SourceIdentity)] {
        try stagedSources(
            where: " AND device = $1 AND inode = $2",
            [String(Int64(bitPattern: device)), String(Int64(bitPattern: inode))])
    }

    private func stagedSources(where condition: String, _ parameters: [String?]) throws
        -> [(shareID: String, identity: SourceIdentity)]
    {
        try connection.withSession { session in
            try session.query(
                "SELECT share_id, device, inode, size, mtime, sha256 FROM sources WHERE state = 'staged'" + condition,
                parameters
            ).rows.compactMap { row in
                guard let shareID = row[0], let device = row[1].flatMap({ Int64($0) }),
                    let inode = row[2].flatMap({ Int64($0) }), let size = row[3].flatMap({ Int64($0) }),
                    let mtime = row[4].flatMap({ Int64($0) }), let sha256 = row[5]
                else { return nil }
                let identity = SourceIdentity(
                    device: UInt64(bitPattern: device), inode: UInt64(bitPattern: inode), size: size,
                    modificationTime: mtime, sha256: sha256)
                return (shareID, identity)
            }
        }
    }

    func markAllSourcesDone() throws {
        try connection.withSession { session in
            try session.query("UPDATE sources SET state = 'done' WHERE state = 'staged'")
        }
    }

    // MARK: Helpers

    /// The attachment events of a manifest, as event columns (share, event, attachment, type, bytes, code).
    private static func attachmentEvents(_ manifest: Manifest) -> [[String?]] {
        manifest.attachments.map { attachment in
            [
                manifest.shareId, (attachment.status == .copied ? LedgerEvent.staged : .failed).rawValue,
                String(attachment.index), attachment.typeIdentifier, attachment.bytes.map { String($0) },
                attachment.error?.code.rawValue,
            ]
        }
    }

    /// The violations of a guarded update: the requested shares it returned no row for, with the state found.
    static func violations(
        _ shareIDs: [String], applied: PostgresRows, from: [ShareState], in session: PostgresConnection.Session
    ) throws -> [PreconditionViolation] {
        let done = Set(applied.rows.compactMap { $0.first ?? nil })
        let missing = shareIDs.filter { !done.contains($0) }
        guard !missing.isEmpty else { return [] }
        var found: [String: ShareState] = [:]
        for row in try session.query("SELECT id, state FROM shares WHERE id = ANY($1::text[])", [pgArray(missing)])
            .rows
        {
            if let id = row[0], let state = row[1].flatMap(ShareState.init(rawValue:)) { found[id] = state }
        }
        return missing.map { PreconditionViolation(shareID: $0, expected: from, found: found[$0]) }
    }
}

/// Rows gathered column by column, to be sent as one PostgreSQL array per column.
struct Columns {
    private(set) var values: [[String?]]

    init(_ count: Int) {
        values = Array(repeating: [], count: count)
    }

    mutating func append(_ row: [String?]) {
        for (column, value) in row.enumerated() { values[column].append(value) }
    }

    mutating func append(contentsOf rows: [[String?]]) {
        for row in rows { append(row) }
    }

    /// One array literal per column.
    var arrays: [String?] { values.map { pgArray($0) } }
}

/// A PostgreSQL array literal of text values (`{"a","b",NULL}`), to be cast to the column's type in SQL.
func pgArray(_ values: [String?]) -> String {
    let items = values.map { value -> String in
        guard let value else { return "NULL" }
        var escaped = "\""
        for character in value {
            if character == "\"" || character == "\\" { escaped.append("\\") }
            escaped.append(character)
        }
        return escaped + "\""
    }
    return "{" + items.joined(separator: ",") + "}"
}

/// `pgArray` of non-optional values.
func pgArray(_ values: [String]) -> String {
    pgArray(values.map { Optional($0) })
}
