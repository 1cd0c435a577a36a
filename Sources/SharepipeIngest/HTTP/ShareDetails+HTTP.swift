import Foundation
import SharepipeLedger
import SharepipeSystem

extension ShareDetails {
    /// A single body's title, text, userInfo and tags, from its headers: `Sharepipe-Title` and `Sharepipe-Text` (the
    /// value as sent, or an RFC 8187 extended value such as `UTF-8''Caf%C3%A9` for what is not ASCII),
    /// `Sharepipe-Tags` (comma-separated, each tag plain or an extended value) and `Sharepipe-User-Info` (the JSON
    /// object, base64). A value that cannot be decoded is ERR_BAD_REQUEST.
    static func fromHeaders(_ head: HTTPRequestHead) throws(ShareError) -> ShareDetails {
        func decoded(_ header: String) throws(ShareError) -> String? {
            guard let value = head[header.lowercased()] else { return nil }
            return try headerText(value, header: header)
        }
        var tags: [String] = []
        for item in (head["sharepipe-tags"] ?? "").split(separator: ",") {
            let tag = try headerText(String(item).trimmingSpaces(), header: "Sharepipe-Tags")
            if !tag.isEmpty { tags.append(tag) }
        }
        var userInfo: [String: JSONValue]?
        if let encoded = head["sharepipe-user-info"] {
            guard let json = Data(base64Encoded: encoded.trimmingSpaces()) else {
                throw ShareError(.badRequest, "Sharepipe-User-Info: expected the JSON object in base64")
            }
            userInfo = try ShareDetails.userInfo(json: json)
        }
        return try ShareDetails(
            title: try decoded("Sharepipe-Title"), text: try decoded("Sharepipe-Text"), userInfo: userInfo, tags: tags)
    }

    /// A header value as sent, or decoded when it is an RFC 8187 extended value (`charset'language'%XX…`).
    private static func headerText(_ value: String, header: String) throws(ShareError) -> String {
        let lowered = value.lowercased()
        guard lowered.hasPrefix("utf-8'") || lowered.hasPrefix("iso-8859-1'") else { return value }
        guard let text = HeaderValue.extendedValue(value) else {
            throw ShareError(.badRequest, "\(header): a malformed RFC 8187 extended value")
        }
        return text
    }

    /// A tus upload's title, text, userInfo and tags, from its `Upload-Metadata` keys `title`, `text`, `userInfo`
    /// (the JSON object) and `tags` (comma-separated).
    static func fromMetadata(_ metadata: [String: String]) throws(ShareError) -> ShareDetails {
        var userInfo: [String: JSONValue]?
        if let json = metadata["userInfo"] { userInfo = try ShareDetails.userInfo(json: Array(json.utf8)) }
        let tags = metadata["tags"].map { list in
            list.split(separator: ",").map { String($0).trimmingSpaces() }.filter { !$0.isEmpty }
        }
        return try ShareDetails(
            title: metadata["title"], text: metadata["text"], userInfo: userInfo, tags: tags ?? [])
    }
}
