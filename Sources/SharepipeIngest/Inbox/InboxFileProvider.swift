import Foundation
import SharepipeSystem

/// The provider of one inbox entry inside a drop: an open, locked regular file (`source`), or an entry that cannot
/// be shared (`failure`: a symlink, FIFO, socket or device inside a dropped folder). Its types come from the name
/// followed by the type sniffed from the descriptor, as `FileItemProvider` derives them. The loader copies from the
/// descriptor directly; the callback methods exist for the protocol and hand out no path, since the file is only
/// ever read through the descriptor that was judged.
struct InboxFileProvider: DescriptorBackedProvider, PresniffedProvider {
    let source: InboxSource?
    let failure: ShareError?
    let registeredTypeIdentifiers: [String]
    let suggestedName: String?
    /// What libmagic said of the head of the descriptor.
    let sniffed: TypeSniffer.SniffedHead?

    init(source: InboxSource, registry: TypeRegistry) {
        self.source = source
        failure = nil
        suggestedName = source.name
        let named = FileItemProvider.namedType(path: source.name, registry: registry)
        sniffed = try? TypeSniffer.sniffHead(descriptor: source.descriptor, declaredType: named, registry: registry)
        registeredTypeIdentifiers = FileItemProvider.derivedTypes(path: source.name, sniffed: sniffed,
        registry: registry)
    }

    init(name: String, failure: ShareError, registry: TypeRegistry) {
        source = nil
        self.failure = failure
        suggestedName = name
        sniffed = nil
        registeredTypeIdentifiers = FileItemProvider.derivedTypes(path: name, sniffed: nil, registry: registry)
    }

    /// Copies the source from its start; a source that changed while it was copied fails (a writer is still at it).
    func copy(engine: CopyEngine, to destination: CopyEngine.Destination) -> Result<CopyEngine.Result, ShareError> {
        guard let source else {
            return .failure(failure ?? ShareError(.missingFile, "the inbox entry could not be opened"))
        }
        do {
            try source.descriptor.rewind()
            let result = try engine.copyFile(from: source.descriptor, sizeHint: source.status.size, to: destination)
            if source.changedSinceOpened() {
                try? System.unlink(destination.path)
                return .failure(ShareError(.io, "the file changed while it was copied", errno: Errno.tryAgain))
            }
            return .success(result)
        } catch let error as ShareError {
            return .failure(error)
        } catch {
            return .failure(ShareError(.io, "\(error)"))
        }
    }

    func loadFileRepresentation(
        forTypeIdentifier typeIdentifier: String, completion: @escaping @Sendable (URL?, (any Error)?) -> Void
    ) {
        completion(nil, failure ?? ShareError(.loadFailed, "an inbox file is read through its descriptor only"))
    }

    func loadDataRepresentation(
        forTypeIdentifier typeIdentifier: String, completion: @escaping @Sendable (Data?, (any Error)?) -> Void
    ) {
        completion(nil, failure ?? ShareError(.loadFailed, "an inbox file is read through its descriptor only"))
    }
}
