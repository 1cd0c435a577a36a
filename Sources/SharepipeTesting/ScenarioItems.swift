import Foundation
import SharepipeCore
import SharepipeScenario
import SharepipeExtensionKit

extension Scenario {
    /// The share as a share extension receives it: one `NSExtensionItem` whose attachments are one `NSItemProvider`
    /// per scenario attachment, in order, each registering the scenario's representations in fidelity order (a file
    /// representation as a file, a data representation as bytes) and behaving as scripted — late, failing, silent,
    /// calling back twice or on the caller's thread, deleting or moving its temporary file after the callback.
    public func makeExtensionItems() -> [NSExtensionItem] {
        let item = NSExtensionItem()
        item.attachments = makeItemProviders()
        return [item]
    }

    /// One `NSItemProvider` per attachment, scripted as ``makeExtensionItems()`` describes.
    public func makeItemProviders() -> [NSItemProvider] {
        attachments.map(Self.itemProvider)
    }

    private static func itemProvider(_ attachment: Attachment) -> NSItemProvider {
        let script = ScriptedItemProvider(
            representations: attachment.representations, suggestedName: attachment.suggestedName)
        let provider = NSItemProvider()
        provider.suggestedName = attachment.suggestedName
        for representation in attachment.representations {
            let type = representation.type
            switch representation.kind {
            case .file:
                provider.registerFileRepresentation(forTypeIdentifier: type, visibility: .all) { completion in
                    script.loadFileRepresentation(forTypeIdentifier: type) { url, error in
                        completion(url, false, error)
                    }
                    return nil
                }
            case .data:
                provider.registerDataRepresentation(forTypeIdentifier: type, visibility: .all) { completion in
                    script.loadDataRepresentation(forTypeIdentifier: type, completion: completion)
                    return nil
                }
            }
        }
        return provider
    }
}
