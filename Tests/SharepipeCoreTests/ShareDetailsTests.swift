import Foundation
import Glibc
import Testing
@testable import SharepipeCore
@testable import SharepipeDaemon
@testable import SharepipeIngest
@testable import SharepipeLedger
@testable import SharepipeSpool
@testable import SharepipeSystem

/// A share's title, text, userInfo and tags: their limits, their JSON in the manifest and the receipt, and what
/// the library's loader and both processors make of them.
@Suite(.timeLimit(.minutes(5)))
struct ShareDetailsTests {
    @Test func limitsAreCheckedWithTheirCodes() throws {
        let limit = String(repeating: "x", count: ShareDetails.maxBytes)
        #expect(try ShareDetails(title: limit, text: limit).text == limit)
        #expect(throws: ShareError(.tooLarge, "the text is 65537 bytes, at most 65536")) {
            try ShareDetails(text: limit + "y")
        }
        #expect(throws: ShareError(.tooLarge, "the title is 65537 bytes, at most 65536")) {
            try ShareDetails(title: limit + "y")
        }
        #expect(throws: ShareError.self) { try ShareDetails(userInfo: ["big": .string(limit)]) }
        #expect(throws: ShareError(.badRequest, "the title contains a NUL character")) {
            try ShareDetails(title: "a\u{0}b")
        }
        #expect(throws: ShareError(.badRequest, "tag 1 contains a comma or a control character")) {
            try ShareDetails(tags: ["ok", "a,b"])
        }
        #expect(throws: ShareError(.badRequest, "tag 0 is empty")) { try ShareDetails(tags: [""]) }
        #expect(throws: ShareError.self) { try ShareDetails(tags: (0...64).map { "t\($0)" }) }
        let kept = try ShareDetails(title: "", text: "", tags: ["b", "a", "b"])
        #expect(kept.title == nil && kept.text == nil && kept.tags == ["b", "a"])
        #expect(kept.isEmpty == false)
        #expect(try ShareDetails().isEmpty)
    }

    @Test func folderNamesBecomeTagsWithinTheRules() throws {
        #expect(InboxIngester.tag(fromFolder: "invoices, 2026\u{7}") == "invoices_ 2026_")
        let long = InboxIngester.tag(fromFolder: String(repeating: "é", count: 200))
        #expect(long.utf8.count == 254 && long.allSatisfy { $0 == "é" })
        #expect(try ShareDetails(tags: [long, InboxIngester.tag(fromFolder: "a,b")]).tags.count == 2)
    }

    @Test func userInfoMustBeAJSONObject() throws {
        #expect(try ShareDetails.userInfo(json: Array(#"{"a": [1, 2.5, null, true]}"#.utf8)) == [
            "a": .array([.integer(1), .number(2.5), .null, .bool(true)]),
        ])
        #expect(throws: ShareError(.badRequest, "userInfo must be a JSON object, got an array")) {
            try ShareDetails.userInfo(json: Array("[1]".utf8))
        }
        #expect(throws: ShareError(.badRequest, "userInfo is not valid JSON")) {
            try ShareDetails.userInfo(json: Array("{".utf8))
        }
        #expect(throws: ShareError(.badRequest, #"share.json: "tags" must hold strings, got a number"#)) {
            try ShareDetails(members: ["tags": .array([.integer(3)])], what: "share.json")
        }
        #expect(throws: ShareError(.badRequest, #"share.json: "title" must be a string, got an object"#)) {
            try ShareDetails(members: ["title": .object([:])], what: "share.json")
        }
        #expect(throws: ShareError(.badRequest, "the share part: tag 0 is empty")) {
            try ShareDetails(members: ["tags": .array([.string("")])], what: "the share part")
        }
    }

    @Test func manifestAndReceiptCarryThemAsTheirOwnKeys() throws {
        let details = try ShareDetails(
            title: "T", text: "body", userInfo: ["k": .integer(1)], tags: ["one", "two"])
        var manifest = Manifest(
            shareId: "S", sourceApp: nil, createdAt: "2026-12-04T00:00:00.000Z", policy: .keepSuccessful,
            attachments: [], details: details)
        let json = try #require(
            try JSONSerialization.jsonObject(with: Data(manifest.encoded())) as? [String: Any])
        #expect(json["title"] as? String == "T")
        #expect(json["tags"] as? [String] == ["one", "two"])
        #expect(try Manifest.decode(manifest.encoded()) == manifest)
        // A manifest without the keys (written before them) reads as no details; one with none writes nulls.
        manifest.details = .empty
        let empty = try #require(try JSONSerialization.jsonObject(with: Data(manifest.encoded())) as? [String: Any])
        #expect(empty["title"] is NSNull && empty["userInfo"] is NSNull && empty["tags"] as? [String] == [])
        let old = #"{"shareId":"S","sourceApp":null,"createdAt":"x","policy":"keep-successful","attachments":[]}"#
        #expect(try Manifest.decode(Array(old.utf8)).details == .empty)

        let receipt = ShareReceipt(shareId: "S", status: .complete, attachments: [], details: details)
        let encoded = try #require(
            try JSONSerialization.jsonObject(with: JSONEncoder().encode(receipt)) as? [String: Any])
        #expect(encoded["text"] as? String == "body")
        #expect(try JSONDecoder().decode(ShareReceipt.self, from: JSONEncoder().encode(receipt)) == receipt)
        let plain = ShareReceipt(shareId: "S", status: .complete, attachments: [])
        let plainKeys = try #require(
            try JSONSerialization.jsonObject(with: JSONEncoder().encode(plain)) as? [String: Any]).keys
        #expect(Set(plainKeys) == ["shareId", "status", "attachments"])
    }

    @Test func theLibrarysLoaderWritesThemAndBothProcessorsUseThem() async throws {
        try await withTemporaryDirectory { dir in
            let spool = try Spool(root: dir + "/state")
            let details = try ShareDetails(
                title: "Trip: Lisbon/Porto", text: "photos from the trip", userInfo: ["album": .string("2026")],
                tags: ["travel", "family"])
            let receipt = await ShareLoader(spool: spool).load(
                [DataItemProvider(data: Data("hello\n".utf8), types: ["public.plain-text"], suggestedName: "a.txt")],
                sourceApp: "com.example", details: details)
            #expect(receipt.status == .complete)
            #expect(receipt.details == details)
            #expect(try spool.manifest(.incoming, receipt.shareId).details == details)

            let out = dir + "/env"
            let command = """
                env | grep '^SHAREPIPE_\\(TITLE\\|TAGS\\)=' | sort > '\(out)' \
                && cat "$SHAREPIPE_SHARE_JSON" > '\(out).json' && printf '%s' "$SHAREPIPE_SHARE_JSON" > '\(out).path'
                """
            let summary = try await Consumer(
                spool: spool, processor: ExecProcessor(command: command, environment: ["TMPDIR": dir]),
                configuration: fastConfiguration()
            ).drain()
            #expect(summary.processed == 1)
            let environment = String(decoding: try System.readFile(out), as: UTF8.self)
            #expect(environment == "SHAREPIPE_TAGS=travel,family\nSHAREPIPE_TITLE=Trip: Lisbon/Porto\n")
            let written = try JSONDecoder().decode(ShareDetails.self, from: Data(try System.readFile(out + ".json")))
            #expect(written == details)
            let path = String(decoding: try System.readFile(out + ".path"), as: UTF8.self)
            #expect(path.hasPrefix(dir + "/sharepipe-share-") && path.hasSuffix(".json"))
            #expect(access(path, F_OK) != 0, "the SHAREPIPE_SHARE_JSON file outlived the share's runs")

            let second = await ShareLoader(spool: spool).load(
                [DataItemProvider(data: Data("again\n".utf8), types: ["public.plain-text"], suggestedName: "b.txt")],
                details: details)
            #expect(second.status == .complete)
            _ = try await Consumer(
                spool: spool,
                processor: StoreProcessor(output: dir + "/out", path: try StorePath("{tag}/{title}/{name}")),
                configuration: fastConfiguration()
            ).drain()
            #expect(access(dir + "/out/travel/Trip: Lisbon_Porto/b.txt", F_OK) == 0)
        }
    }

    @Test func storeTemplatesLeaveOutATitleOrTagTheShareLacks() async throws {
        try await withTemporaryDirectory { dir in
            let spool = try Spool(root: dir + "/state")
            let receipt = await ShareLoader(spool: spool).load(
                [DataItemProvider(data: Data("x\n".utf8), types: ["public.plain-text"], suggestedName: "c.txt")])
            #expect(receipt.status == .complete)
            _ = try await Consumer(
                spool: spool,
                processor: StoreProcessor(output: dir + "/out", path: try StorePath("{tag}/{title}/{name}")),
                configuration: fastConfiguration()
            ).drain()
            #expect(access(dir + "/out/c.txt", F_OK) == 0)
        }
    }
}
