import Foundation
import SharepipeSystem

/// The duplicate check (issue 21): the contents of copies, looked up and recorded in one transaction.
///
/// A batch of reservations is one `execute`: SQLite's `BEGIN IMMEDIATE` holds the file's write lock for all of it,
/// PostgreSQL takes the dialect's `keyLock` on each content hash of the batch first (in key order, so that two
/// batches cannot deadlock) — so two batches holding one content run one after the other and the second finds the
/// first's row, while batches of other contents do not wait. Each claim's row is inserted with the original its own
/// lookup finds, share after share in the batch's order and in attachment order within a share, so that the
/// second copy of a content finds the first, within one share as within one batch.
extension LedgerStore {
    /// The key-lock class of content hashes ("dupe" in ASCII).
    static let contentLockClass: Int64 = 0x6475_7065

    /// v4: the contents of copies, looked up by hash within the window (`contents_sha256`), by share for staging,
    /// recovery and `show`, and by time for retention and `status`. `rejected` is 1 for a duplicate refused by
    /// `reject` (never an original); `original_*` name the original of a duplicate.
    static func contentsMigration(_ dialect: SQLDialect) -> [String] {
        [
            """
            CREATE TABLE contents (share_id TEXT NOT NULL, attachment INTEGER NOT NULL, sha256 TEXT NOT NULL,
                file_id TEXT NOT NULL, created_at \(dialect.bigint) NOT NULL, rejected INTEGER NOT NULL DEFAULT 0,
                original_share TEXT, original_file TEXT, original_at \(dialect.bigint))
            """,
            "CREATE INDEX contents_sha256 ON contents(sha256, created_at)",
            "CREATE INDEX contents_share ON contents(share_id)",
            "CREATE INDEX contents_created ON contents(created_at)",
        ]
    }

    /// The lock key of a content: its hash's first 32 bits. Two contents sharing a key only wait for each other.
    static func lockKey(_ sha256: String) -> Int64 {
        Int64(Int32(bitPattern: UInt32(sha256.prefix(8), radix: 16) ?? 0))
    }

    /// The earliest copy of a content that counts as an original: not a rejected duplicate, within the window, of a
    /// share that is live or done — or reserved a moment ago by a share not staged yet. Binds: hash, window start,
    /// reservations since.
    static let originalQuery = """
        SELECT c.share_id, c.file_id, c.created_at FROM contents c LEFT JOIN shares s ON s.id = c.share_id
        WHERE c.sha256 = ? AND c.created_at >= ? AND c.rejected = 0
            AND (s.state IN ('staged', 'published', 'claimed', 'processed') OR (s.id IS NULL AND c.created_at >= ?))
        ORDER BY c.created_at, c.share_id, c.attachment LIMIT 1
        """

    /// Looks up, per claimed content, the earliest copy within the window that counts as an original (ingested or
    /// reserved by a live share; never one of a share rolled back, rejected, quarantined or purged), and records
    /// each claim with what it found (see `ContentReservation`), in one transaction for the whole batch that
    /// serializes on the contents' hashes across every process on the ledger. The reservations are applied in the
    /// batch's order, so that a later one finds an earlier one's rows. Returns, per reservation, the origins, one
    /// per claim (nil: an original).
    package func reserveContents(_ reservations: [ContentReservation]) throws -> [[DuplicateOrigin?]] {
        let dialect = driver.dialect
        var statements: [SQLStatement] = []
        if let keyLock = dialect.keyLock {
            // Every key of the batch, sorted, before any insert: two batches (two daemons) cannot deadlock.
            let keys = Set(reservations.flatMap { $0.claims.map { Self.lockKey($0.sha256) } })
            for key in keys.sorted() {
                statements.append(SQLStatement(keyLock, [.integer(Self.contentLockClass), .integer(key)]))
            }
        }
        var answers: [Int?] = []
        for reservation in reservations {
            guard !reservation.claims.isEmpty else {
                answers.append(nil)
                continue
            }
            statements += Self.statements(reserving: reservation, dialect: dialect)
            answers.append(statements.count)
            statements.append(Self.recordedDuplicates(ofShare: reservation.shareID))
        }
        guard answers.contains(where: { $0 != nil }) else { return reservations.map { _ in [] } }
        // Not durable: a reservation a power cut loses belonged to a share not staged yet either (staging commits
        // durably, and a durable commit makes every earlier one durable).
        let results = try driver.execute(statements, durable: false)
        return zip(reservations, answers).map { reservation, answer in
            guard let answer else { return [] }
            let recorded = results[answer].rows.compactMap(Self.recordedDuplicate)
            let origins = Dictionary(recorded.map { ($0.index, $0.origin) }) { first, _ in first }
            return reservation.claims.map { origins[$0.index] }
        }
    }

    /// One share's part of a reservation batch: each claim inserted with the original its own lookup finds, in
    /// attachment order; under `reject`, an all-or-nothing share that lost a copy keeps no original.
    private static func statements(reserving reservation: ContentReservation, dialect: SQLDialect) -> [SQLStatement] {
        let bigint = dialect.bigint
        let share = SQLValue.text(reservation.shareID)
        let rejects: Int64 = reservation.policy == .reject ? 1 : 0
        var statements = reservation.claims.map { claim in
            // Typed parameters: PostgreSQL cannot infer a parameter's type from a select list.
            SQLStatement(
                """
                INSERT INTO contents (share_id, attachment, sha256, file_id, created_at, rejected, original_share,
                    original_file, original_at)
                SELECT CAST(? AS TEXT), CAST(? AS INTEGER), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS \(bigint)),
                    CASE WHEN o.share_id IS NULL THEN 0 ELSE CAST(? AS INTEGER) END, o.share_id, o.file_id, o.created_at
                FROM (SELECT 1 AS one) AS base LEFT JOIN (\(Self.originalQuery)) AS o ON 1 = 1
                """,
                [share, SQLValue(claim.index), .text(claim.sha256), .text(claim.fileID),
                 .integer(reservation.createdAt), .integer(rejects), .text(claim.sha256),
                 .integer(reservation.windowStart), .integer(reservation.reservationsSince)])
        }
        if reservation.policy == .reject && reservation.allOrNothing {
            // The share is rolled back: none of its copies may become an original another share is refused for.
            statements.append(SQLStatement(
                """
                DELETE FROM contents WHERE share_id = ? AND rejected = 0
                    AND EXISTS (SELECT 1 FROM contents AS d WHERE d.share_id = ? AND d.rejected = 1)
                """,
                [share, share]))
        }
        return statements
    }

    /// The original a content would duplicate now, without reserving anything: the HTTP server's look before a body
    /// whose `Repr-Digest` names it (`--duplicates reject`). Binds as `originalQuery`.
    package func original(
        ofContent sha256: String, windowStart: Int64, reservationsSince: Int64
    ) throws -> DuplicateOrigin? {
        let rows = try driver.run(
            Self.originalQuery, [.text(sha256), .integer(windowStart), .integer(reservationsSince)]
        ).rows
        guard let row = rows.first, let share = row[0].text, let file = row[1].text, let at = row[2].integer else {
            return nil
        }
        return DuplicateOrigin(shareId: share, fileId: file, createdAtMilliseconds: at)
    }

    /// Forgets the reservations of shares that were never staged (recovery removed their staging directories).
    package func releaseContents(ofShares shareIDs: [String]) throws {
        guard !shareIDs.isEmpty else { return }
        _ = try driver.execute(shareIDs.map { shareID in
            SQLStatement(
                """
                DELETE FROM contents WHERE share_id = ? AND NOT EXISTS (
                    SELECT 1 FROM shares WHERE id = ? AND state IN ('staged', 'published', 'claimed', 'processed'))
                """,
                [.text(shareID), .text(shareID)])
        }, durable: false)
    }

    /// The duplicate attachments recorded for a share, by index.
    package func duplicates(ofShare shareID: String) throws -> [RecordedDuplicate] {
        try driver.execute([Self.recordedDuplicates(ofShare: shareID)], durable: true)[0].rows
            .compactMap(Self.recordedDuplicate)
    }

    /// The duplicate attachments recorded for a share, by index; rows for `recordedDuplicate`.
    private static func recordedDuplicates(ofShare shareID: String) -> SQLStatement {
        SQLStatement(
            """
            SELECT attachment, original_share, original_file, original_at, rejected FROM contents
            WHERE share_id = ? AND original_share IS NOT NULL ORDER BY attachment
            """,
            [.text(shareID)])
    }

    private static func recordedDuplicate(_ row: [SQLValue]) -> RecordedDuplicate? {
        guard let index = row[0].integer, let share = row[1].text, let file = row[2].text, let at = row[3].integer
        else { return nil }
        return RecordedDuplicate(
            index: Int(index), origin: DuplicateOrigin(shareId: share, fileId: file, createdAtMilliseconds: at),
            rejected: row[4].integer == 1)
    }

    /// Duplicates per UTC day since `since` (ms since the epoch), oldest day first.
    package func duplicateDays(since: Int64) throws -> [DuplicateDay] {
        try driver.run(
            """
            SELECT created_at / 86400000, SUM(1 - rejected), SUM(rejected) FROM contents
            WHERE created_at >= ? AND original_share IS NOT NULL GROUP BY created_at / 86400000
            ORDER BY created_at / 86400000
            """,
            [.integer(since)]
        ).rows.compactMap { row in
            guard let day = row[0].integer else { return nil }
            return DuplicateDay(day: DuplicateDay.name(ofDay: day), flagged: row[1].int, rejected: row[2].int)
        }
    }

    /// The content rows of a share being staged that no reservation recorded (`--duplicates accept`), so that a
    /// later check finds them; part of the staging transaction.
    static func contentInserts(_ manifest: Manifest, dialect: SQLDialect) -> [SQLStatement] {
        let createdAt = Date.milliseconds(rfc3339: manifest.createdAt) ?? LedgerClock.now()
        let share = SQLValue.text(manifest.shareId)
        return manifest.attachments.compactMap { copy in
            guard copy.status == .copied, let sha256 = copy.sha256, let fileID = copy.fileId else { return nil }
            return SQLStatement(
                """
                INSERT INTO contents (share_id, attachment, sha256, file_id, created_at)
                SELECT CAST(? AS TEXT), CAST(? AS INTEGER), CAST(? AS TEXT), CAST(? AS TEXT),
                CAST(? AS \(dialect.bigint))
                WHERE NOT EXISTS (SELECT 1 FROM contents WHERE share_id = ? AND file_id = ?)
                """,
                [share, SQLValue(copy.index), .text(sha256), .text(fileID), .integer(createdAt), share,
                 .text(fileID)])
        }
    }
}
