import SharepipeSpool
import SharepipeSystem

/// A provider whose content is already open and judged (an inbox file): the loader copies from its descriptor
/// instead of asking for a temporary file by path, so the bytes copied are the bytes that were checked.
protocol DescriptorBackedProvider: ItemProvider {
    /// Copies the content from its start into `destination`.
    func copy(engine: CopyEngine, to destination: CopyEngine.Destination) -> Result<CopyEngine.Result, ShareError>
}

/// A provider that sniffed the head of its content to derive its types: the loader reuses the answer when the
/// copy's head is the same, so libmagic never runs twice on one file.
protocol PresniffedProvider: ItemProvider {
    var sniffed: TypeSniffer.SniffedHead? { get }
}

/// What a source that removes what it ingested (the inbox) attaches to a share it loads.
struct ShareOrigin: Sendable {
    /// The name of a dropped folder (the manifest's `folder`), nil for a single file.
    var folder: String?
    /// Given the attachments that were copied (index, SHA-256) and whether all were, the source identities to
    /// record with the share and the owner that removes the sources once it is published; nil when nothing is to
    /// be removed.
    var sources: @Sendable (_ copied: [(index: Int, sha256: String)], _ complete: Bool)
        -> (identities: [SourceIdentity], owner: any ShareSources)?
}
