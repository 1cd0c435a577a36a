import SharepipeLedger
import SharepipeSystem

/// issue 19: the record of each resumable (tus) upload in the ledger. The upload's files in `STATE/uploads/ID/` stay
/// the truth about its bytes and offset; the row follows them (written after each change of the record, repaired
/// by the server's retention loop), so that `status` counts the uploads in flight of every daemon on one ledger.
extension LedgerStore: UploadRecords {
    func recordUploads(_ uploads: [TusUpload], holder: String) throws {
        guard !uploads.isEmpty else { return }
        let now = LedgerClock.now()
        _ = try driver.execute(uploads.map { upload in
            SQLStatement(
                """
                INSERT INTO http_uploads (id, holder, length, upload_offset, owner, created_at, expires_at, share_id,
                    updated_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (id) DO UPDATE SET holder = excluded.holder, upload_offset = excluded.upload_offset,
                    expires_at = excluded.expires_at, share_id = excluded.share_id, updated_at = excluded.updated_at
                """,
                [
                    .text(upload.id), .text(holder), .integer(upload.length), .integer(upload.offset),
                    SQLValue(upload.owner), .integer(upload.createdAt), .integer(upload.expiresAt),
                    SQLValue(upload.shareId), .integer(now),
                ])
        }, durable: false)
    }

    func forgetUploads(holder: String, except kept: [String]) throws {
        let rows = try driver.run("SELECT id FROM http_uploads WHERE holder = ?", [.text(holder)]).rows
        let keep = Set(kept)
        let gone = rows.compactMap { $0[0].text }.filter { !keep.contains($0) }
        guard !gone.isEmpty else { return }
        _ = try driver.execute(
            gone.map { id in
                SQLStatement("DELETE FROM http_uploads WHERE id = ? AND holder = ?", [.text(id), .text(holder)])
            },
            durable: false)
    }

    func forgetUpload(_ id: String) throws {
        _ = try driver.execute([SQLStatement("DELETE FROM http_uploads WHERE id = ?", [.text(id)])], durable: false)
    }

    func uploadsInFlight(now: Int64) throws -> Int {
        try driver.run(
            "SELECT COUNT(*) FROM http_uploads WHERE share_id IS NULL AND expires_at > ?", [.integer(now)]
        ).scalar.int
    }
}
