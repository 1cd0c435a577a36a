#if os(Linux)
import Foundation

/// The `userInfo` key of an extension item's attributed title.
public let NSExtensionItemAttributedTitleKey = "NSExtensionItemAttributedTitleKey"
/// The `userInfo` key of an extension item's attributed content text.
public let NSExtensionItemAttributedContentTextKey = "NSExtensionItemAttributedContentTextKey"
/// The `userInfo` key of an extension item's attachments.
public let NSExtensionItemAttachmentsKey = "NSExtensionItemAttachmentsKey"

/// One item a host app hands to an extension (or an extension hands back): attachments and optional text.
///
/// As on Apple's platforms, `userInfo` is the backing store: `attachments`, `attributedTitle` and
/// `attributedContentText` read and write its keys.
open class NSExtensionItem: NSObject, NSCopying {
    /// Everything the item carries, keyed as Apple keys it.
    open var userInfo: [AnyHashable: Any]?

    /// An empty item.
    public override init() {
        super.init()
    }

    /// The item's attachments, in the order the source app gave them.
    open var attachments: [NSItemProvider]? {
        get { userInfo?[NSExtensionItemAttachmentsKey] as? [NSItemProvider] }
        set { set(newValue, for: NSExtensionItemAttachmentsKey) }
    }

    /// The item's title.
    open var attributedTitle: NSAttributedString? {
        get { userInfo?[NSExtensionItemAttributedTitleKey] as? NSAttributedString }
        set { set(newValue, for: NSExtensionItemAttributedTitleKey) }
    }

    /// The item's text content, such as a post's body.
    open var attributedContentText: NSAttributedString? {
        get { userInfo?[NSExtensionItemAttributedContentTextKey] as? NSAttributedString }
        set { set(newValue, for: NSExtensionItemAttributedContentTextKey) }
    }

    private func set(_ value: Any?, for key: String) {
        var info = userInfo ?? [:]
        info[key] = value
        userInfo = info
    }

    /// A new item with the same `userInfo` (attachments are shared, not copied, as on Apple's platforms).
    open func copy(with zone: NSZone? = nil) -> Any {
        let copy = NSExtensionItem()
        copy.userInfo = userInfo
        return copy
    }
}
#endif
