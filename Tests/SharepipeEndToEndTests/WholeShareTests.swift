import Foundation
import Glibc
import Testing

/// The whole share (SPEC "Spool layout"): a title, a text, a userInfo and tags from every source — `share`, a
/// scenario file, HTTP multipart, a single body, tus, an inbox folder with its path and its share.json — into the
/// manifest, the receipt, `show --json`, the exec processor's environment and the store processor's path, and
/// never into a log line.
@Suite(.serialized, .timeLimit(.minutes(10)))
struct WholeShareTests {
    /// Text no log line may hold.
    static let secretTitle = "Quarterly Report — Ünïcode"
    static let secretText = "the caption the user typed: zebra-lantern-4711"

    /// An exec command that dumps, per share, the environment's title and tags, the SHAREPIPE_SHARE_JSON file (its
    /// content, mode and path) and the share's manifest into `OUT/<share-id>/`, renamed there once complete.
    static func dumpCommand(_ out: String) -> String {
        """
        d='\(out)'/"$SHAREPIPE_SHARE_ID"; t='\(out)'/".part-$SHAREPIPE_SHARE_ID"; mkdir -p "$t" && \
        printf '%s' "$SHAREPIPE_TITLE" > "$t/title" && printf '%s' "$SHAREPIPE_TAGS" > "$t/tags" && \
        cat "$SHAREPIPE_SHARE_JSON" > "$t/share.json" && stat -c %a "$SHAREPIPE_SHARE_JSON" > "$t/mode" && \
        printf '%s' "$SHAREPIPE_SHARE_JSON" > "$t/path" && \
        cp "$(dirname "$SHAREPIPE_FILE")/manifest.json" "$t/manifest.json" && mv "$t" "$d"
        """
    }

    /// The shares whose dumps are complete.
    static func dumped(_ out: String) -> [String] {
        directoryEntries(out).filter { UUID(uuidString: $0) != nil }
    }

    /// A `share` part or share.json with the secret title and text.
    static func description(userInfo: String, tags: [String]) -> String {
        let list = tags.map { "\"\($0)\"" }.joined(separator: ", ")
        return #"{"title": "\#(secretTitle)", "text": "\#(secretText)", "userInfo": \#(userInfo), "tags": [\#(list)]}"#
    }

    /// What the exec command saw for one share.
    struct Dump {
        var title: String
        var tags: String
        var shareJSON: [String: Any]
        var mode: String
        var path: String
        var manifest: [String: Any]

        init(_ directory: String) throws {
            func text(_ name: String) throws -> String {
                let data = try #require(FileManager.default.contents(atPath: directory + "/" + name))
                return String(decoding: data, as: UTF8.self)
            }
            title = try text("title")
            tags = try text("tags")
            shareJSON = try jsonFile(directory + "/share.json")
            mode = try text("mode").trimmingCharacters(in: .whitespacesAndNewlines)
            path = try text("path")
            manifest = try jsonFile(directory + "/manifest.json")
        }
    }

    // MARK: - share and scenario files

    @Test func shareFlagsReachTheManifestReceiptShowExecEnvironmentAndStorePath() async throws {
        try await withTemporaryDirectory { dir in
            let state = dir + "/state"
            let flags = [
                "--title", Self.secretTitle, "--text", Self.secretText,
                "--user-info", #"{"url": "https://e.com/a", "n": 3}"#,
                "--tag", "invoices", "--tag", "2026,paid",
            ]
            let result = try await runSharepipe(
                ["share", "--state", state, "--json"] + flags + [fixturePath("files/document.pdf")])
            #expect(result.status == 0, "\(result.stderr)")
            let receipt = try result.jsonObject
            #expect(receipt["title"] as? String == Self.secretTitle)
            #expect(receipt["text"] as? String == Self.secretText)
            #expect((receipt["userInfo"] as? [String: Any])?["url"] as? String == "https://e.com/a")
            #expect(receipt["tags"] as? [String] == ["invoices", "2026", "paid"])
            let shareID = try #require(receipt["shareId"] as? String)
            let manifest = try jsonFile(state + "/incoming/" + shareID + "/manifest.json")
            #expect(manifest["title"] as? String == Self.secretTitle)
            #expect(manifest["text"] as? String == Self.secretText)
            #expect((manifest["userInfo"] as? [String: Any])?["n"] as? Int == 3)
            #expect(manifest["tags"] as? [String] == ["invoices", "2026", "paid"])
            let shown = try await runSharepipe(["show", shareID, "--state", state, "--json"]).jsonObject
            #expect(shown["title"] as? String == Self.secretTitle)
            #expect(shown["text"] as? String == Self.secretText)
            #expect(shown["tags"] as? [String] == ["invoices", "2026", "paid"])
            let listed = try await runSharepipe(["ls", "--state", state, "--json"]).jsonObject
            let entry = try #require((listed["shares"] as? [[String: Any]])?.first)
            #expect(entry["title"] as? String == Self.secretTitle)
            #expect(entry["text"] == nil)

            let dumps = dir + "/dumps"
            let consumed = try await runSharepipe([
                "consume", "--state", state, "--processor", "exec", "--exec", Self.dumpCommand(dumps),
            ])
            #expect(consumed.status == 0, "\(consumed.stderr)")
            let dump = try Dump(dumps + "/" + shareID)
            #expect(dump.title == Self.secretTitle)
            #expect(dump.tags == "invoices,2026,paid")
            #expect(dump.shareJSON["title"] as? String == Self.secretTitle)
            #expect(dump.shareJSON["text"] as? String == Self.secretText)
            #expect((dump.shareJSON["userInfo"] as? [String: Any])?["url"] as? String == "https://e.com/a")
            #expect(dump.mode == "400")
            #expect(!FileManager.default.fileExists(atPath: dump.path), "the share's JSON file outlived its runs")
            #expect(!consumed.stderr.contains(Self.secretTitle) && !consumed.stderr.contains(Self.secretText))

            // The same share through a scenario file, stored by {tag}/{title}/{name}.
            let scenario = try writeFile(dir + "/scenario.json", """
                { "title": "Receipt 42", "text": "paid in cash", "tags": ["receipts"], "userInfo": {"k": true},
                  "attachments": [ { "suggestedName": "r.pdf", "representations": [
                    { "type": "com.adobe.pdf", "path": "\(fixturePath("files/document.pdf"))" } ] } ] }
                """)
            let scripted = try await runSharepipe([
                "share", "--state", state, "--json", "--scenario", scenario, "--tag", "cash",
            ])
            #expect(scripted.status == 0, "\(scripted.stderr)")
            #expect(try scripted.jsonObject["tags"] as? [String] == ["receipts", "cash"])
            #expect(try scripted.jsonObject["title"] as? String == "Receipt 42")
            let stored = try await runSharepipe([
                "consume", "--state", state, "--processor", "store", "--output", dir + "/out",
                "--store-path", "{tag}/{title}/{name}",
            ])
            #expect(stored.status == 0, "\(stored.stderr)")
            #expect(FileManager.default.fileExists(atPath: dir + "/out/receipts/Receipt 42/r.pdf"))
        }
    }

    @Test func badDetailsAreRefusedWithTheirCodes() async throws {
        try await withTemporaryDirectory { dir in
            let state = dir + "/state"
            let pdf = fixturePath("files/document.pdf")
            let notObject = try await runSharepipe(["share", "--state", state, "--json", "--user-info", "[1, 2]", pdf])
            #expect(notObject.status == 2)
            #expect(notObject.stderr.contains("userInfo must be a JSON object"))
            let notJSON = try await runSharepipe(["share", "--state", state, "--user-info", "{nope", pdf])
            #expect(notJSON.status == 2)
            let long = String(repeating: "x", count: 64 * 1024 + 1)
            let tooLong = try await runSharepipe(["share", "--state", state, "--json", "--text", long, pdf])
            #expect(tooLong.status == 4)
            #expect((try tooLong.jsonObject["error"] as? [String: Any])?["code"] as? String == "ERR_TOO_LARGE")
            let badTag = try await runSharepipe(["share", "--state", state, "--json", "--tag", "bad\u{1}tag", pdf])
            #expect(badTag.status == 4)
            #expect((try badTag.jsonObject["error"] as? [String: Any])?["code"] as? String == "ERR_BAD_REQUEST")
            #expect(directoryEntries(state + "/incoming").isEmpty)
        }
    }

    // MARK: - HTTP, tus and the inbox, through one daemon

    @Test func everyDaemonSourceReachesTheExecEnvironmentAndNoLogLine() async throws {
        try await withTemporaryDirectory { dir in
            let sandbox = HTTPSandbox(root: dir)
            let dumps = dir + "/dumps"
            let daemon = try await sandbox.start([
                "--settle", "100", "--processor", "exec", "--exec", Self.dumpCommand(dumps),
            ])
            let userInfo = #"{"url": "https://example.com/article", "depth": 2}"#
            var shares: [String: String] = [:]

            // Multipart: the share part.
            let part = Self.description(userInfo: userInfo, tags: ["web", "reading"])
            let multipart = try await curlResponse([
                "-F", "share=\(part);type=application/json", "-F", "page=@\(fixturePath("files/page.html"))",
                daemon.baseURL + "/v1/shares",
            ])
            #expect(multipart.status == 201, "\(multipart.body)")
            #expect(try multipart.json["title"] as? String == Self.secretTitle)
            #expect(try multipart.json["text"] as? String == Self.secretText)
            #expect(try multipart.json["tags"] as? [String] == ["web", "reading"])
            shares["multipart"] = try #require(try multipart.json["shareId"] as? String)

            // A single body: headers, the title as an RFC 8187 extended value.
            let ascii = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
            let encodedTitle = "UTF-8''" + Self.secretTitle.addingPercentEncoding(withAllowedCharacters: ascii)!
            let single = try await curlResponse([
                "-H", "Content-Type: application/pdf", "-H", "Sharepipe-Title: " + encodedTitle,
                "-H", "Sharepipe-Text: " + Self.secretText, "-H", "Sharepipe-Tags: scans, UTF-8''%C3%A9t%C3%A9",
                "-H", "Sharepipe-User-Info: " + Data(userInfo.utf8).base64EncodedString(),
                "--data-binary", "@" + fixturePath("files/document.pdf"), daemon.baseURL + "/v1/shares",
            ])
            #expect(single.status == 201, "\(single.body)")
            #expect(try single.json["title"] as? String == Self.secretTitle)
            #expect(try single.json["tags"] as? [String] == ["scans", "été"])
            shares["single"] = try #require(try single.json["shareId"] as? String)

            // tus: Upload-Metadata.
            let metadata = [
                ("filename", "notes.txt"), ("title", Self.secretTitle), ("text", Self.secretText),
                ("userInfo", userInfo), ("tags", "tus,notes"),
            ].map { $0.0 + " " + Data($0.1.utf8).base64EncodedString() }.joined(separator: ",")
            let notes = fixturePath("files/notes.txt")
            let size = try #require(try FileManager.default.attributesOfItem(atPath: notes)[.size] as? Int)
            let created = try await curlResponse([
                "-H", "Tus-Resumable: 1.0.0", "-X", "POST", "-H", "Upload-Length: \(size)",
                "-H", "Upload-Metadata: " + metadata, daemon.baseURL + "/v1/uploads/",
            ])
            #expect(created.status == 201, "\(created.body)")
            let location = daemon.baseURL + (try #require(created.headers["location"]))
            let patched = try await curlResponse([
                "-H", "Tus-Resumable: 1.0.0", "-X", "PATCH", "-H", "Content-Type: application/offset+octet-stream",
                "-H", "Upload-Offset: 0", "--data-binary", "@" + notes, location,
            ])
            #expect(patched.status == 204, "\(patched.body)")
            let tusShare: String = try #require(patched.headers["sharepipe-share-id"])
            shares["tus"] = tusShare

            // The inbox: a folder two levels deep, with its share.json.
            let drop = dir + "/outside/invoices"
            try writeFile(drop + "/2026/x.pdf", try fixtureContents("files/document.pdf"))
            try writeFile(drop + "/share.json", Self.description(userInfo: userInfo, tags: ["acme"]))
            try FileManager.default.moveItem(atPath: drop, toPath: sandbox.inbox + "/invoices")

            #expect(try await eventually(.seconds(90)) {
                Self.dumped(dumps).count >= 4 && directoryEntries(sandbox.inbox).isEmpty
            }, "\(directoryEntries(dumps)); \(daemon.process.stderrSoFar)")
            let folderShare = try #require(Self.dumped(dumps).first { !shares.values.contains($0) })
            shares["inbox"] = folderShare
            let tags = [
                "multipart": "web,reading", "single": "scans,été", "tus": "tus,notes", "inbox": "invoices,2026,acme",
            ]
            for (source, shareID) in shares {
                let dump = try Dump(dumps + "/" + shareID)
                #expect(dump.title == Self.secretTitle, "\(source)")
                #expect(dump.tags == tags[source], "\(source)")
                #expect(dump.shareJSON["text"] as? String == Self.secretText, "\(source)")
                #expect((dump.shareJSON["userInfo"] as? [String: Any])?["depth"] as? Int == 2, "\(source)")
                #expect(dump.manifest["title"] as? String == Self.secretTitle, "\(source)")
                #expect(dump.manifest["text"] as? String == Self.secretText, "\(source)")
                #expect(dump.manifest["tags"] as? [String] == tags[source]?.split(separator: ",").map(String.init))
                #expect(dump.mode == "400", "\(source)")
            }
            // The share.json was no attachment, and went with its folder.
            let inboxManifest = try Dump(dumps + "/" + folderShare).manifest
            #expect((inboxManifest["attachments"] as? [Any])?.count == 1)
            #expect(inboxManifest["folder"] as? String == "invoices")

            // Bad descriptions: refused whole, nothing lost.
            let badPart = try await curlResponse([
                "-F", #"share={"userInfo": [1]};type=application/json"#,
                "-F", "page=@\(fixturePath("files/page.html"))",
                daemon.baseURL + "/v1/shares",
            ])
            #expect(badPart.status == 400)
            #expect((try badPart.json["error"] as? [String: Any])?["code"] as? String == "ERR_BAD_REQUEST")
            let badTus = try await curlResponse([
                "-H", "Tus-Resumable: 1.0.0", "-X", "POST", "-H", "Upload-Length: 3",
                "-H", "Upload-Metadata: userInfo " + Data("42".utf8).base64EncodedString(),
                daemon.baseURL + "/v1/uploads/",
            ])
            #expect(badTus.status == 400)
            let badFolder = dir + "/outside/broken"
            try writeFile(badFolder + "/a.txt", "kept\n")
            try writeFile(badFolder + "/share.json", #"{"title": "unterminated"#)
            try FileManager.default.moveItem(atPath: badFolder, toPath: sandbox.inbox + "/broken")
            let rejected = sandbox.inbox + "/.rejected"
            #expect(try await eventually(.seconds(60)) {
                FileManager.default.fileExists(atPath: rejected + "/broken.reason.json")
            }, "\(daemon.process.stderrSoFar)")
            let reason = try jsonFile(rejected + "/broken.reason.json")
            #expect(reason["code"] as? String == "ERR_BAD_REQUEST")
            #expect((reason["message"] as? String)?.contains("share.json is not valid JSON") == true)
            #expect(FileManager.default.contents(atPath: rejected + "/broken/a.txt") == Data("kept\n".utf8))
            #expect(FileManager.default.fileExists(atPath: rejected + "/broken/share.json"))

            let result = try await daemon.stop()
            #expect(result.status == 0, "\(result.stderr)")
            // Without --log-names no line carries the title or the text, whatever the source.
            for line in result.stderr.split(separator: "\n") {
                #expect(!line.contains("Quarterly") && !line.contains("zebra-lantern"), "\(line)")
            }
        }
    }

    @Test func storePathFilesEverySourceByTagAndTitle() async throws {
        try await withTemporaryDirectory { dir in
            let sandbox = HTTPSandbox(root: dir)
            let daemon = try await sandbox.start(["--settle", "100", "--store-path", "{tag}/{title}/{name}"])
            let part = #"{"title": "Front page", "text": "body", "userInfo": {"a": 1}, "tags": ["news"]}"#
            let upload = [
                "-H", "Idempotency-Key: front-page-1", "-F", "share=\(part);type=application/json",
                "-F", "page=@\(fixturePath("files/page.html"));filename=front.html", daemon.baseURL + "/v1/shares",
            ]
            let multipart = try await curlResponse(upload)
            #expect(multipart.status == 201, "\(multipart.body)")
            #expect(try multipart.json["text"] as? String == "body")
            // The ledger keeps the answer for a replay without the text and userInfo.
            let replay = try await curlResponse(upload)
            #expect(replay.status == 200, "\(replay.body)")
            #expect(try replay.json["shareId"] as? String == (try multipart.json["shareId"] as? String))
            #expect(try replay.json["title"] as? String == "Front page")
            #expect(try replay.json["tags"] as? [String] == ["news"])
            #expect(try replay.json["text"] is NSNull && (try replay.json["userInfo"]) is NSNull)
            let single = try await curlResponse([
                "-H", "Content-Type: application/pdf", "-H", "Sharepipe-Title: A/B: ../scan",
                "-H", "Sharepipe-Tags: scans",
                "-H", "Content-Disposition: attachment; filename=scan.pdf",
                "--data-binary", "@" + fixturePath("files/document.pdf"), daemon.baseURL + "/v1/shares",
            ])
            #expect(single.status == 201, "\(single.body)")
            try writeFile(dir + "/outside/invoices/2026/x.pdf", try fixtureContents("files/document.pdf"))
            try writeFile(dir + "/outside/invoices/share.json", #"{"title": "March"}"#)
            try FileManager.default.moveItem(atPath: dir + "/outside/invoices", toPath: sandbox.inbox + "/invoices")
            let expected = ["news/Front page/front.html", "scans/A_B: .._scan/scan.pdf", "invoices/March/x.pdf"]
            #expect(try await eventually(.seconds(90)) {
                expected.allSatisfy { FileManager.default.fileExists(atPath: sandbox.output + "/" + $0) }
            }, "\(storedPaths(sandbox.output)); \(daemon.process.stderrSoFar)")
            #expect(Set(storedPaths(sandbox.output)) == Set(expected))
            let result = try await daemon.stop()
            #expect(result.status == 0, "\(result.stderr)")
        }
    }
    /// A kill -9 between publishing a folder share and removing its sources: the restart removes the folder and its
    /// share.json (recorded like the files) instead of ingesting them again.
    @Test(arguments: ["publish.move-incoming", "publish.sync-incoming", "publish.remove-sources"])
    func aKillAfterPublishingAFolderShareRemovesItsShareJSONOnce(point: String) async throws {
        try await withTemporaryDirectory { dir in
            let (inbox, state, output) = (dir + "/inbox", dir + "/state", dir + "/processed")
            try writeFile(dir + "/outside/invoices/2026/x.pdf", try fixtureContents("files/document.pdf"))
            try writeFile(dir + "/outside/invoices/share.json", #"{"title": "March", "tags": ["acme"]}"#)
            try FileManager.default.createDirectory(atPath: inbox, withIntermediateDirectories: true)
            try FileManager.default.moveItem(atPath: dir + "/outside/invoices", toPath: inbox + "/invoices")
            let daemon = [
                "daemon", "--oneshot", "--inbox", inbox, "--state", state, "--output", output,
                "--store-path", "{tag}/{title}/{name}",
            ]
            let killed = try await runSharepipe(daemon, environment: ["SHAREPIPE_CRASH_AFTER": point])
            #expect(killed.status == 128 + SIGKILL, "the crash hook for \(point) did not fire: \(killed.stderr)")
            let restarted = try await runSharepipe(daemon)
            #expect(restarted.status == 0, "\(restarted.stderr)")
            #expect(directoryEntries(inbox).isEmpty, "after \(point): \(directoryEntries(inbox + "/invoices"))")
            #expect(storedPaths(output) == ["invoices/March/x.pdf"], "after \(point)")
        }
    }
}

/// A fixture's bytes.
private func fixtureContents(_ name: String) throws -> [UInt8] {
    Array(try Data(contentsOf: URL(fileURLWithPath: fixturePath(name))))
}

/// Every regular file below `root`, relative to it.
private func storedPaths(_ root: String) -> [String] {
    guard let walker = FileManager.default.enumerator(atPath: root) else { return [] }
    return walker.compactMap { $0 as? String }.filter { relative in
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: root + "/" + relative, isDirectory: &isDirectory)
            && !isDirectory.boolValue
    }
}
