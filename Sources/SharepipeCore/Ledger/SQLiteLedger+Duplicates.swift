import Foundation

/// The duplicate check (issue 21) in `ledger.sqlite`. `BEGIN IMMEDIATE` takes the database's write lock before the
/// lookup, so the lookup and the record of every process on the ledger are serialized: of two shares with one
/// content, the second to reserve finds the first.
extension SQLiteLedger {
    /// v3: the contents of copies, looked up by hash within the window (`contents_sha256`), by share for
    /// `show`, staging and recovery, and by time for retention and `status`.
    static let contentsMigration = """
        CREATE TABLE contents (
            share_id TEXT NOT NULL,
            attachment INTEGER NOT NULL,
            sha256 TEXT NOT NULL,
            file_id TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            rejected INTEGER NOT NULL DEFAULT 0,
            original_share TEXT,
            original_file TEXT,
            original_at INTEGER
        );
        CREATE INDEX contents_sha256 ON contents(sha256, created_at);
        CREATE INDEX contents_share ON contents(share_id);
        CREATE INDEX contents_created ON contents(created_at);
        """

    /// The earliest copy of a content that counts as an original: not itself a rejected duplicate, within the
    /// window, and of a share that is live or done — or reserved a moment ago by a share not yet staged.
    private static let originalQuery = """
        SELECT c.share_id, c.file_id, c.created_at FROM contents c LEFT JOIN shares s ON s.id = c.share_id
        WHERE c.sha256 = ? AND c.created_at >= ? AND c.rejected = 0
            AND (s.state IN ('staged', 'published', 'claimed', 'processed') OR (s.id IS NULL AND c.created_at >= ?))
        ORDER BY c.created_at, c.share_id, c.attachment LIMIT 1
        """

    func reserveContents(_ reservation: ContentReservation) throws -> [DuplicateOrigin?] {
        guard !reservation.claims.isEmpty else { return [] }
        // Not durable: a reservation a power cut loses belonged to a share that was not staged yet either (staging
        // commits durably, and a durable commit makes every earlier one durable).
        return try database.transaction(durable: false) { connection in
            var found: [String: DuplicateOrigin] = [:]
            for sha256 in Set(reservation.claims.map(\.sha256)) {
                let row = try connection.query(
                    Self.originalQuery,
                    [.text(sha256), .integer(reservation.windowStart), .integer(reservation.reservationsSince)]
                ).first
                if let row, let shareID = row[0].text, let fileID = row[1].text, let createdAt = row[2].integer {
                    found[sha256] = DuplicateOrigin(
                        shareId: shareID, fileId: fileID, createdAtMilliseconds: createdAt)
                }
            }
            let plan = DuplicatePlan(reservation, found: found)
            for row in plan.rows {
                try Self.insertContent(
                    shareID: reservation.shareID, createdAt: reservation.createdAt, row: row, on: connection)
            }
            return plan.origins
        }
    }

    func releaseContents(ofShares shareIDs: [String]) throws {
        guard !shareIDs.isEmpty else { return }
        try database.transaction(durable: false) { connection in
            for shareID in shareIDs {
                try connection.query(
                    """
                    DELETE FROM contents WHERE share_id = ?1 AND NOT EXISTS (
                        SELECT 1 FROM shares WHERE id = ?1 AND state IN ('staged', 'published', 'claimed', 'processed'))
                    """,
                    [.text(shareID)])
            }
        }
    }

    func duplicates(ofShare shareID: String) throws -> [RecordedDuplicate] {
        try database.withConnection { connection in
            try connection.query(
                """
                SELECT attachment, original_share, original_file, original_at, rejected FROM contents
                WHERE share_id = ? AND original_share IS NOT NULL ORDER BY attachment
                """,
                [.text(shareID)]
            ).compactMap { row in
                guard let index = row[0].integer, let share = row[1].text, let file = row[2].text,
                    let at = row[3].integer
                else { return nil }
                return RecordedDuplicate(
                    index: Int(index), origin: DuplicateOrigin(shareId: share, fileId: file, createdAtMilliseconds: at),
                    rejected: row[4].integer == 1)
            }
        }
    }

    func duplicateDays(since: Int64) throws -> [DuplicateDay] {
        try database.withConnection { connection in
            try connection.query(
                """
                SELECT created_at / 86400000, SUM(1 - rejected), SUM(rejected) FROM contents
                WHERE created_at >= ? AND original_share IS NOT NULL GROUP BY 1 ORDER BY 1
                """,
                [.integer(since)]
            ).compactMap { row in
                guard let day = row[0].integer else { return nil }
                return DuplicateDay(
                    day: DuplicateDay.name(ofDay: day), flagged: Int(row[1].integer ?? 0),
                    rejected: Int(row[2].integer ?? 0))
            }
        }
    }

    /// Records the copies of a share being staged that no reservation recorded (`--duplicates accept`), so that a
    /// later check finds them; call inside the staging transaction.
    static func recordContents(of manifest: Manifest, now: Int64, on connection: SQLiteDatabase.Connection) throws {
        let copies = manifest.attachments.filter { $0.status == .copied && $0.sha256 != nil && $0.fileId != nil }
        guard !copies.isEmpty,
            try connection.query("SELECT 1 FROM contents WHERE share_id = ? LIMIT 1", [.text(manifest.shareId)])
                .isEmpty
        else { return }
        let createdAt = Date.milliseconds(rfc3339: manifest.createdAt) ?? now
        for copy in copies {
            let claim = ContentClaim(index: copy.index, sha256: copy.sha256 ?? "", fileID: copy.fileId ?? "")
            try insertContent(
                shareID: manifest.shareId, createdAt: createdAt,
                row: ContentRow(claim: claim, origin: copy.duplicateOf, rejected: false), on: connection)
        }
    }

    private static func insertContent(
        shareID: String, createdAt: Int64, row: ContentRow, on connection: SQLiteDatabase.Connection
    ) throws {
        try connection.query(
            """
            INSERT INTO contents (share_id, attachment, sha256, file_id, created_at, rejected, original_share,
                original_file, original_at)
            VALUES (?,?,?,?,?,?,?,?,?)
            """,
            [.text(shareID), .integer(Int64(row.claim.index)), .text(row.claim.sha256), .text(row.claim.fileID),
             .integer(createdAt), .integer(row.rejected ? 1 : 0), SQLiteValue(row.origin?.shareId),
             SQLiteValue(row.origin?.fileId),
             row.origin.flatMap { Date.milliseconds(rfc3339: $0.createdAt) }.map { .integer($0) } ?? .null])
    }
}
