import Foundation
import SharepipeCore
import SharepipeExtensionKit
import SharepipeTesting
import Testing

/// The kit's `NSExtensionItem` becomes a share with everything it carries: its attachments, its `attributedTitle`,
/// its `attributedContentText` and the rest of its `userInfo`.
@Suite(.timeLimit(.minutes(5)))
struct ExtensionItemShareTests {
    /// A Safari-like item: the page's URL file, its title, the text the user selected, and two userInfo keys.
    private func safariItem() throws -> NSExtensionItem {
        let item = NSExtensionItem()
        item.attachments = [try #require(NSItemProvider(contentsOf: fixture("files/page.html")))]
        item.attributedTitle = NSAttributedString(string: "Example Domain")
        item.attributedContentText = NSAttributedString(string: "the text the user selected")
        var info = item.userInfo ?? [:]
        info["pageURL"] = "https://example.com/"
        info["scroll"] = ["y": 120, "ratio": 0.5, "saved": true] as [String: Any]
        item.userInfo = info
        return item
    }

    @Test func anExtensionItemBecomesAShareCarryingItsTitleTextAndUserInfo() async throws {
        let harness = try LifecycleHarness()
        let share = try await harness.publish(try safariItem(), sourceApp: "com.apple.mobilesafari")
        #expect(share.receipt.status == .complete)
        let details = share.receipt.details
        #expect(details.title == "Example Domain")
        #expect(details.text == "the text the user selected")
        #expect(details.userInfo == [
            "pageURL": .string("https://example.com/"),
            "scroll": .object(["y": .integer(120), "ratio": .number(0.5), "saved": .bool(true)]),
        ])
        let manifest = try harness.spool.manifest(.incoming, share.shareId)
        #expect(manifest.details == details)
        #expect(manifest.sourceApp == "com.apple.mobilesafari")
        #expect(manifest.attachments.first?.typeIdentifier == "public.html")
    }

    @Test func theHarnessSharesAnItemThroughAnyLoader() async throws {
        let harness = try LifecycleHarness()
        let loader = ShareLoader(spool: harness.spool)
        let receipt = await ExtensionHarness.share(try safariItem(), with: loader, tags: ["web"])
        #expect(receipt.status == .complete)
        #expect(receipt.details.tags == ["web"])
        #expect(try harness.spool.manifest(.incoming, receipt.shareId).details.title == "Example Domain")
    }

    @Test func aUserInfoValueJSONCannotHoldRefusesTheShareWhole() async throws {
        let harness = try LifecycleHarness()
        let item = try safariItem()
        item.userInfo?["when"] = Date()
        let receipt = await ExtensionHarness.share(item, with: ShareLoader(spool: harness.spool))
        #expect(receipt.status == .rejected)
        #expect(receipt.error?.code == .badRequest)
        #expect(receipt.attachments.map(\.status) == [.failed])
        #expect(try harness.spool.shareIDs(in: .incoming).isEmpty)
        let long = NSExtensionItem()
        long.attributedContentText = NSAttributedString(string: String(repeating: "a", count: 70_000))
        #expect(throws: ShareError.self) { try long.shareDetails() }
    }

    @Test func scenarioItemsCarryTheScenariosTitleTextAndUserInfo() throws {
        let scenario = try Scenario.load(path: fixture("scenarios/safari-page-with-title-and-text.json").path)
        let item = try #require(scenario.makeExtensionItems().first)
        #expect(item.attributedTitle?.string == "Share extensions: what a host app hands over")
        #expect(item.attributedContentText?.string.hasPrefix("An extension item carries") == true)
        #expect(item.userInfo?["pageURL"] as? String == "https://example.com/articles/share-extensions")
        let details = try item.shareDetails(tags: scenario.details.tags)
        #expect(details == scenario.details)
    }
}
