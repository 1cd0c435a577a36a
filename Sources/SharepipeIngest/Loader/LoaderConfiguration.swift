import SharepipeLedger

/// Limits and policies of the loader.
public struct LoaderConfiguration: Sendable {
    /// Types the product accepts; an attachment's first declared type conforming to one of them is chosen.
    public var accept: [String] = ["public.item"]
    /// What a failed attachment does to the rest of its share.
    public var policy: SharePolicy = .keepSuccessful
    /// Largest attachment, counted while copying (`--max-file-size`).
    public var maxFileSize: Int64 = 4 << 30
    /// Largest share, all attachments together (`--max-share-size`).
    public var maxShareSize: Int64 = 16 << 30
    /// Most attachments in one share (`--max-attachments`).
    public var maxAttachments: Int = 100
    /// How long a provider may take to call back (`--load-timeout`).
    public var loadTimeout: Duration = .seconds(30)
    /// Attachments loaded at the same time.
    package var concurrency: Int = 4
    /// Refuse new shares while this many are published and not yet processed (`--max-pending-shares`).
    package var maxPendingShares: Int = 50_000
    /// Refuse new shares while this many bytes are published and not yet processed (`--max-pending-bytes`).
    package var maxPendingBytes: Int64 = 64 << 30
    /// Refuse new shares when the state directory's file system has less free space than this (`--min-free`).
    package var minFreeBytes: Int64 = 64 << 20
    /// What an attachment whose content was ingested within `duplicateWindow` gets (`--duplicates`).
    package var duplicates: DuplicatePolicy = .accept
    /// How far back a copy counts as the original of a duplicate (`--duplicate-window`).
    package var duplicateWindow: Duration = .seconds(30 * 86_400)
    /// Called as an attachment's copy advances: attachment index, bytes so far.
    package var progress: (@Sendable (_ index: Int, _ bytes: Int64) -> Void)?

    /// The defaults documented in the README.
    public init() {}
}
