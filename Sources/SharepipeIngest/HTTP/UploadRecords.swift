/// Where the records of resumable uploads are kept besides their own files, so that every daemon on one ledger sees
/// every upload in flight (`LedgerStore+Uploads.swift`). A row only follows the files in `STATE/uploads/`: those
/// decide what an upload holds, a row that lags behind them is repaired by the retention loop.
protocol UploadRecords: Sendable {
    /// Writes (or replaces) the rows of these uploads, whose files are in `holder`'s state directory.
    func recordUploads(_ uploads: [TusUpload], holder: String) throws
    /// Removes `holder`'s rows of uploads other than `kept` (their files are gone).
    func forgetUploads(holder: String, except kept: [String]) throws
    /// Removes the row of one upload.
    func forgetUpload(_ id: String) throws
    /// Uploads not finished yet and not expired at `now` (ms since the epoch), over every holder.
    func uploadsInFlight(now: Int64) throws -> Int
}
