import Foundation
import SharepipeCore
import SharepipeExtensionKit

extension NSExtensionItem {
    /// The item's title, text and userInfo as a share carries them: `attributedTitle` and `attributedContentText` as
    /// plain strings, and `userInfo` without the three keys Apple keeps there (attachments, title, text) as a JSON
    /// object. ERR_BAD_REQUEST for a `userInfo` key that is not a string or a value that is not a property-list
    /// value JSON can hold; ERR_TOO_LARGE past the 64 KiB limits.
    public func shareDetails(tags: [String] = []) throws(ShareError) -> ShareDetails {
        let reserved: Set<String> = [
            NSExtensionItemAttachmentsKey, NSExtensionItemAttributedTitleKey, NSExtensionItemAttributedContentTextKey,
        ]
        var members: [String: JSONValue] = [:]
        for (key, value) in userInfo ?? [:] {
            guard let name = key.base as? String else {
                throw ShareError(.badRequest, "userInfo has a key that is not a string (\(type(of: key.base)))")
            }
            guard !reserved.contains(name) else { continue }
            members[name] = try Self.json(value, at: name)
        }
        return try ShareDetails(
            title: attributedTitle?.string, text: attributedContentText?.string,
            userInfo: members.isEmpty ? nil : members, tags: tags)
    }

    /// The item's attachments as the providers the loader takes.
    public func shareProviders() -> [any ItemProvider] {
        (attachments ?? []).map(ExtensionItemProvider.init)
    }

    /// A property-list value as JSON: strings, booleans, numbers, null, arrays and string-keyed dictionaries.
    private static func json(_ value: Any, at path: String) throws(ShareError) -> JSONValue {
        switch value {
        case let text as String: return .string(text)
        case let text as NSAttributedString: return .string(text.string)
        case let flag as Bool: return .bool(flag)
        case let number as Int: return .integer(Int64(number))
        case let number as Int64: return .integer(number)
        case let number as Int32: return .integer(Int64(number))
        case let number as Double where number.isFinite: return .number(number)
        case is NSNull: return .null
        case let items as [Any]:
            var values: [JSONValue] = []
            for (index, item) in items.enumerated() { values.append(try json(item, at: "\(path)[\(index)]")) }
            return .array(values)
        case let dictionary as [String: Any]:
            var members: [String: JSONValue] = [:]
            for (key, item) in dictionary { members[key] = try json(item, at: "\(path).\(key)") }
            return .object(members)
        default:
            throw ShareError(.badRequest, "userInfo \(path) is a \(type(of: value)), which JSON cannot hold")
        }
    }
}

/// One `NSItemProvider` as the loader's `ItemProvider`: its representations, loaded through its own methods.
struct ExtensionItemProvider: ItemProvider {
    let provider: NSItemProvider

    var registeredTypeIdentifiers: [String] { provider.registeredTypeIdentifiers }
    var suggestedName: String? { provider.suggestedName }

    func loadFileRepresentation(
        forTypeIdentifier typeIdentifier: String, completion: @escaping @Sendable (URL?, (any Error)?) -> Void
    ) {
        provider.loadFileRepresentation(forTypeIdentifier: typeIdentifier, completionHandler: completion)
    }

    func loadDataRepresentation(
        forTypeIdentifier typeIdentifier: String, completion: @escaping @Sendable (Data?, (any Error)?) -> Void
    ) {
        provider.loadDataRepresentation(forTypeIdentifier: typeIdentifier, completionHandler: completion)
    }
}

extension ExtensionHarness {
    /// The share an extension item becomes, loaded and published by `loader`: its attachments, and its title, text
    /// and userInfo (``NSExtensionItem/shareDetails(tags:)``). A title, text or userInfo that cannot be carried is a
    /// receipt rejected with its code, nothing loaded.
    public static func share(
        _ item: NSExtensionItem, with loader: ShareLoader, sourceApp: String? = nil, tags: [String] = []
    ) async -> ShareReceipt {
        let providers = item.shareProviders()
        do {
            return await loader.load(providers, sourceApp: sourceApp, details: try item.shareDetails(tags: tags))
        } catch {
            return ShareReceipt.refused(.rejected, error, providers: providers)
        }
    }
}

extension Scenario {
    /// The scenario's title, text and userInfo set on an extension item, as a host app would.
    func describe(_ item: NSExtensionItem) {
        if let title = details.title { item.attributedTitle = NSAttributedString(string: title) }
        if let text = details.text { item.attributedContentText = NSAttributedString(string: text) }
        var info = item.userInfo ?? [:]
        for (key, value) in details.userInfo ?? [:] { info[key] = Self.foundationValue(value) }
        item.userInfo = info
    }

    private static func foundationValue(_ value: JSONValue) -> Any {
        switch value {
        case .null: NSNull()
        case .bool(let flag): flag
        case .integer(let number): Int(number)
        case .number(let number): number
        case .string(let text): text
        case .array(let items): items.map(foundationValue)
        case .object(let members): members.mapValues(foundationValue)
        }
    }
}

extension LifecycleHarness {
    /// Loads and publishes the share an extension item becomes: its attachments, title, text and userInfo.
    @discardableResult
    public func publish(_ item: NSExtensionItem, sourceApp: String? = nil) async throws(ShareError) -> PublishedShare {
        await publish(item.shareProviders(), sourceApp: sourceApp, details: try item.shareDetails())
    }
}
