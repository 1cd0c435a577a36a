import Foundation

/// The duplicate check (issue 21) in PostgreSQL, shared by daemons on several hosts. A reservation takes a
/// transaction-scoped advisory lock per content hash before its lookup, so two daemons reserving one content are
/// serialized and the second finds the first's row; reservations of other contents do not wait for each other.
extension PostgresLedger {
    /// The advisory-lock class of content hashes ("dupe" in ASCII); the two-key form keeps these locks apart from
    /// the one-key migration lock.
    static let contentLockClass: Int32 = 0x6475_7065

    /// v4: the contents of copies, as in SQLite.
    static let contentsMigration = [
        """
        CREATE TABLE contents (
            share_id TEXT NOT NULL,
            attachment INTEGER NOT NULL,
            sha256 TEXT NOT NULL,
            file_id TEXT NOT NULL,
            created_at BIGINT NOT NULL,
            rejected BOOLEAN NOT NULL DEFAULT false,
            original_share TEXT,
            original_file TEXT,
            original_at BIGINT
        )
        """,
        "CREATE INDEX contents_sha256 ON contents(sha256, created_at)",
        "CREATE INDEX contents_share ON contents(share_id)",
        "CREATE INDEX contents_created ON contents(created_at)",
    ]

    /// The lock key of a content: its hash's first 32 bits. Two contents sharing a key only wait for each other.
    static func lockKey(_ sha256: String) -> Int32 {
        Int32(bitPattern: UInt32(sha256.prefix(8), radix: 16) ?? 0)
    }

    func reserveContents(_ reservation: ContentReservation) throws -> [DuplicateOrigin?] {
        guard !reservation.claims.isEmpty else { return [] }
        let hashes = Array(Set(reservation.claims.map(\.sha256))).sorted()
        let keys = Array(Set(hashes.map(Self.lockKey))).sorted().map { String($0) }
        return try connection.transaction { session in
            // In key order, so that two reservations sharing several keys cannot deadlock.
            try session.query(
                """
                SELECT pg_advisory_xact_lock($1, k)
                FROM (SELECT k FROM unnest($2::int[]) AS t(k) ORDER BY k OFFSET 0) AS ordered
                """,
                [String(Self.contentLockClass), pgArray(keys)])
            var found: [String: DuplicateOrigin] = [:]
            for row in try session.query(
                """
                SELECT DISTINCT ON (c.sha256) c.sha256, c.share_id, c.file_id, c.created_at
                FROM contents c LEFT JOIN shares s ON s.id = c.share_id
                WHERE c.sha256 = ANY($1::text[]) AND c.created_at >= $2 AND NOT c.rejected
                    AND (s.state IN ('staged', 'published', 'claimed', 'processed')
                        OR (s.id IS NULL AND c.created_at >= $3))
                ORDER BY c.sha256, c.created_at, c.share_id, c.attachment
                """,
                [pgArray(hashes), String(reservation.windowStart), String(reservation.reservationsSince)]
            ).rows {
                guard let sha256 = row[0], let shareID = row[1], let fileID = row[2],
                    let createdAt = row[3].flatMap({ Int64($0) })
                else { continue }
                found[sha256] = DuplicateOrigin(shareId: shareID, fileId: fileID, createdAtMilliseconds: createdAt)
            }
            let plan = DuplicatePlan(reservation, found: found)
            guard !plan.rows.isEmpty else { return plan.origins }
            var columns = Columns(7)
            for row in plan.rows {
                columns.append([
                    String(row.claim.index), row.claim.sha256, row.claim.fileID, row.rejected ? "t" : "f",
                    row.origin?.shareId, row.origin?.fileId,
                    row.origin.flatMap { Date.milliseconds(rfc3339: $0.createdAt) }.map { String($0) },
                ])
            }
            try session.query(
                """
                INSERT INTO contents (share_id, attachment, sha256, file_id, created_at, rejected, original_share,
                    original_file, original_at)
                SELECT $1, a, h, f, $2, r, os, ofile, oat
                FROM unnest($3::int[], $4::text[], $5::text[], $6::boolean[], $7::text[], $8::text[], $9::bigint[])
                    AS t(a, h, f, r, os, ofile, oat)
                """,
                [reservation.shareID, String(reservation.createdAt)] + columns.arrays)
            return plan.origins
        }
    }

    func releaseContents(ofShares shareIDs: [String]) throws {
        guard !shareIDs.isEmpty else { return }
        try connection.withSession { session in
            try session.query(
                """
                DELETE FROM contents c WHERE c.share_id = ANY($1::text[]) AND NOT EXISTS (
                    SELECT 1 FROM shares s
                    WHERE s.id = c.share_id AND s.state IN ('staged', 'published', 'claimed', 'processed'))
                """,
                [pgArray(shareIDs)])
        }
    }

    func duplicates(ofShare shareID: String) throws -> [RecordedDuplicate] {
        try connection.withSession { session in
            try session.query(
                """
                SELECT attachment, original_share, original_file, original_at, rejected FROM contents
                WHERE share_id = $1 AND original_share IS NOT NULL ORDER BY attachment
                """,
                [shareID]
            ).rows.compactMap { row in
                guard let index = row[0].flatMap({ Int($0) }), let share = row[1], let file = row[2],
                    let at = row[3].flatMap({ Int64($0) })
                else { return nil }
                return RecordedDuplicate(
                    index: index, origin: DuplicateOrigin(shareId: share, fileId: file, createdAtMilliseconds: at),
                    rejected: row[4] == "t")
            }
        }
    }

    func duplicateDays(since: Int64) throws -> [DuplicateDay] {
        try connection.withSession { session in
            try session.query(
                """
                SELECT created_at / 86400000, COUNT(*) FILTER (WHERE NOT rejected), COUNT(*) FILTER (WHERE rejected)
                FROM contents WHERE created_at >= $1 AND original_share IS NOT NULL GROUP BY 1 ORDER BY 1
                """,
                [String(since)]
            ).rows.compactMap { row in
                guard let day = row[0].flatMap({ Int64($0) }) else { return nil }
                return DuplicateDay(
                    day: DuplicateDay.name(ofDay: day), flagged: row[1].flatMap { Int($0) } ?? 0,
                    rejected: row[2].flatMap { Int($0) } ?? 0)
            }
        }
    }

    /// The content columns (share, attachment, hash, file, created at, original share, file, time) of the copies
    /// of shares being staged; the staging statement records those no reservation recorded.
    static func contentColumns(_ manifest: Manifest, now: Int64) -> [[String?]] {
        let createdAt = String(Date.milliseconds(rfc3339: manifest.createdAt) ?? now)
        return manifest.attachments.compactMap { copy in
            guard copy.status == .copied, let sha256 = copy.sha256, let fileID = copy.fileId else { return nil }
            return [
                manifest.shareId, String(copy.index), sha256, fileID, createdAt, copy.duplicateOf?.shareId,
                copy.duplicateOf?.fileId,
                copy.duplicateOf.flatMap { Date.milliseconds(rfc3339: $0.createdAt) }.map { String($0) },
            ]
        }
    }
}
