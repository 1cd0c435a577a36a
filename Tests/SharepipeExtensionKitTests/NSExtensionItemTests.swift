import Foundation
@testable import SharepipeExtensionKit
import Testing

@Suite(.timeLimit(.minutes(5)))
struct NSExtensionItemTests {
    @Test func attachmentsAndTextLiveInUserInfo() throws {
        let item = NSExtensionItem()
        #expect(item.attachments == nil)
        let provider = NSItemProvider()
        item.attachments = [provider]
        item.attributedContentText = NSAttributedString(string: "look at this")
        item.attributedTitle = NSAttributedString(string: "Title")
        #expect(item.attachments?.first === provider)
        #expect((item.userInfo?[NSExtensionItemAttachmentsKey] as? [NSItemProvider])?.first === provider)
        #expect(item.attributedContentText?.string == "look at this")
        #expect(item.attributedTitle?.string == "Title")
        let copy = try #require(item.copy() as? NSExtensionItem)
        #expect(copy !== item && copy.attachments?.first === provider)
    }

    @Test func onlyTheFirstCallEndsTheRequest() async throws {
        let context = NSExtensionContext(inputItems: [NSExtensionItem()])
        #expect((context.inputItems as? [NSExtensionItem])?.count == 1)
        let expired: Bool = try await completion { done in
            context.completeRequest(returningItems: nil) { expired in done(expired) }
        }
        #expect(expired == false)
        context.completeRequest(returningItems: [])
        context.cancelRequest(withError: CocoaError(.userCancelled))
        #expect(context.endings.count == 3)
        guard case .completed(itemCount: 0) = context.endings[0] else {
            Issue.record("expected the first ending to be completeRequest, found \(context.endings[0])")
            return
        }
    }
}
