import SharepipeCore
import SharepipeScenario  // ScriptedItemProvider

let spool = try Spool(root: "/var/lib/myapp/spool")           // ERR_CONTAINER_UNAVAILABLE if unusable
var limits = LoaderConfiguration()
limits.accept = ["public.image", "com.adobe.pdf"]
limits.policy = .keepSuccessful
let loader = ShareLoader(spool: spool, configuration: limits)

// A provider that hands out a temporary file, deletes it the moment the callback returns, and is 50 ms late:
let photo = ScriptedItemProvider(representations: [
    .init(type: "public.heic", kind: .file, source: .file("IMG_0001.HEIC"), delay: .milliseconds(50),
          afterCallback: .delete),
    .init(type: "public.jpeg", kind: .data, source: .file("IMG_0001.jpg")),
], suggestedName: "IMG_0001.HEIC")
let receipt = await loader.load([photo, FileItemProvider(path: "scan.pdf")], sourceApp: "com.example")
// receipt.status == .complete; receipt.attachments[0].typeIdentifier == "public.heic", its copy intact

struct Uploader: Processor {
    func process(_ share: ClaimedShare) async throws {
        for attachment in share.attachments {  // upload attachment.path here; fileId is stable across retries
            print(share.shareId, attachment.fileId, attachment.typeIdentifier, attachment.path)
        }
    }
}
let summary = try await Consumer(spool: spool, processor: Uploader()).drain()
