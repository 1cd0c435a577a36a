/// issue 19: the table of resumable (tus) uploads, which `LedgerStore+Uploads.swift` (in the HTTP floor) writes.
extension LedgerStore {
    /// v6: the table (`holder` names the host and state directory whose files the row follows).
    static func uploadsMigration(_ dialect: SQLDialect) -> [String] {
        [
            """
            CREATE TABLE http_uploads (id TEXT PRIMARY KEY, holder TEXT NOT NULL, length \(dialect.bigint) NOT NULL,
                upload_offset \(dialect.bigint) NOT NULL, owner TEXT, created_at \(dialect.bigint) NOT NULL,
                expires_at \(dialect.bigint) NOT NULL, share_id TEXT, updated_at \(dialect.bigint) NOT NULL)
            """,
            "CREATE INDEX http_uploads_holder ON http_uploads(holder)",
        ]
    }
}
