import Foundation
import Testing

/// `sharepipe activation check`, through the built binary: the four realistic rules of issue 7 as predicates and as
/// dictionaries, rule files in every form, scenarios, and the usage errors a user meets.
@Suite(.timeLimit(.minutes(5)))
struct ActivationCommandTests {
    /// One realistic rule in both forms; `dictionary` is inline JSON.
    struct Rule {
        var predicate: String
        var dictionary: String
    }

    /// Every attachment conforms to `public.image`, and there is at least one.
    static let imagesOnly = Rule(
        predicate: """
            SUBQUERY(extensionItems, $extensionItem, $extensionItem.attachments.@count >= 1 AND \
            SUBQUERY($extensionItem.attachments, $attachment, ANY $attachment.registeredTypeIdentifiers \
            UTI-CONFORMS-TO "public.image").@count == $extensionItem.attachments.@count).@count == 1
            """,
        dictionary: #"{"NSExtensionActivationSupportsImageWithMaxCount": 10}"#)

    /// Exactly one attachment, a URL that is not a file URL.
    static let oneWebURL = Rule(
        predicate: """
            SUBQUERY(extensionItems, $extensionItem, $extensionItem.attachments.@count == 1 AND \
            SUBQUERY($extensionItem.attachments, $attachment, ANY $attachment.registeredTypeIdentifiers \
            UTI-CONFORMS-TO "public.url" AND NOT (ANY $attachment.registeredTypeIdentifiers \
            UTI-CONFORMS-TO "public.file-url")).@count == 1).@count == 1
            """,
        dictionary: #"{"NSExtensionActivationSupportsWebURLWithMaxCount": 1}"#)

    /// Images and movies only: at most 2 of each and 4 in all.
    static let imagesOrMovies = Rule(
        predicate: """
            SUBQUERY(extensionItems, $e, $e.attachments.@count >= 1 AND $e.attachments.@count <= 4 \
            AND SUBQUERY($e.attachments, $a, ANY $a.registeredTypeIdentifiers \
            UTI-CONFORMS-TO "public.image").@count <= 2 \
            AND SUBQUERY($e.attachments, $a, ANY $a.registeredTypeIdentifiers \
            UTI-CONFORMS-TO "public.movie").@count <= 2 \
            AND SUBQUERY($e.attachments, $a, ANY $a.registeredTypeIdentifiers UTI-CONFORMS-TO "public.image" \
            OR ANY $a.registeredTypeIdentifiers UTI-CONFORMS-TO "public.movie").@count == $e.attachments.@count \
            ).@count == 1
            """,
        dictionary: """
            {"NSExtensionActivationSupportsImageWithMaxCount": 2, "NSExtensionActivationSupportsMovieWithMaxCount": 2, \
            "NSExtensionActivationSupportsAttachmentsWithMaxCount": 4}
            """)

    /// Text (any number of attachments, all text), or exactly one URL.
    static let textOrOneURL = Rule(
        predicate: """
            SUBQUERY(extensionItems, $e, ($e.attachments.@count >= 1 AND SUBQUERY($e.attachments, $a, \
            ANY $a.registeredTypeIdentifiers UTI-CONFORMS-TO "public.text").@count == $e.attachments.@count) \
            OR ($e.attachments.@count == 1 AND SUBQUERY($e.attachments, $a, \
            ANY $a.registeredTypeIdentifiers UTI-CONFORMS-TO "public.url").@count == 1)).@count == 1
            """,
        dictionary: """
            {"NSExtensionActivationSupportsText": true, "NSExtensionActivationSupportsWebURLWithMaxCount": 1}
            """)

    static let heicPhoto = "=public.heic,public.jpeg"
    static let movie = "=com.apple.quicktime-movie"
    static let webURL = "=public.url"
    static let text = "=public.plain-text"

    /// Runs `activation check --rule RULE ARGUMENTS...`.
    private func check(_ rule: String, _ arguments: [String]) async throws -> ProcessResult {
        try await runSharepipe(["activation", "check", "--rule", rule] + arguments)
    }

    /// Checks the share against both forms of the rule and expects the same answer from each.
    private func expect(
        _ rule: Rule, _ share: [String], activated: Bool, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        for (form, text) in [("predicate", rule.predicate), ("dictionary", rule.dictionary)] {
            let result = try await check(text, share)
            let verdict = activated ? "activated: " : "not activated: "
            #expect(result.status == (activated ? 0 : 1), "\(form) over \(share): \(result.stdout)\(result.stderr)",
                    sourceLocation: sourceLocation)
            #expect(result.stdout.hasPrefix(verdict), "\(form) over \(share): \(result.stdout)",
                    sourceLocation: sourceLocation)
            #expect(result.stdout.hasSuffix("\n") && result.stdout.count(where: { $0 == "\n" }) == 1,
                    sourceLocation: sourceLocation)
            #expect(result.stderr.isEmpty, "\(form) over \(share): \(result.stderr)", sourceLocation: sourceLocation)
        }
    }

    // MARK: - The four realistic rules

    @Test func imagesOnly() async throws {
        try await expect(Self.imagesOnly, [Self.heicPhoto], activated: true)
        try await expect(Self.imagesOnly, [Self.heicPhoto, "=public.png", "=com.compuserve.gif"], activated: true)
        try await expect(Self.imagesOnly, [fixturePath("files/photo.jpg")], activated: true)
        try await expect(Self.imagesOnly, [Self.heicPhoto, Self.webURL], activated: false)
        try await expect(Self.imagesOnly, [fixturePath("files/document.pdf")], activated: false)
        try await expect(Self.imagesOnly, [Self.heicPhoto, fixturePath("files/document.pdf")], activated: false)
        try await expect(Self.imagesOnly, [], activated: false)
    }

    @Test func oneWebURL() async throws {
        try await expect(Self.oneWebURL, [Self.webURL], activated: true)
        try await expect(Self.oneWebURL, ["=public.url,com.apple.active-webpage"], activated: true)
        try await expect(Self.oneWebURL, [Self.webURL, Self.webURL], activated: false)
        try await expect(Self.oneWebURL, ["=public.file-url"], activated: false)
        try await expect(Self.oneWebURL, [Self.heicPhoto, Self.webURL], activated: false)
        try await expect(Self.oneWebURL, [Self.heicPhoto], activated: false)
    }

    @Test func imagesOrMoviesAtMostTwoOfEachAndFourInAll() async throws {
        try await expect(Self.imagesOrMovies, [Self.heicPhoto], activated: true)
        try await expect(Self.imagesOrMovies, [Self.movie], activated: true)
        try await expect(Self.imagesOrMovies, [Self.heicPhoto, "=public.png", Self.movie, "=public.mpeg-4"], activated: true)
        try await expect(Self.imagesOrMovies, [Self.heicPhoto, "=public.png", "=public.jpeg"], activated: false)
        try await expect(Self.imagesOrMovies, [Self.movie, Self.movie, Self.movie], activated: false)
        try await expect(Self.imagesOrMovies, [Self.heicPhoto, Self.webURL], activated: false)
        try await expect(Self.imagesOrMovies, [fixturePath("files/document.pdf")], activated: false)
        try await expect(Self.imagesOrMovies, [fixturePath("files/photo.heic"), fixturePath("files/clip.mp4")],
                   activated: true)
    }

    @Test func textOrOneURL() async throws {
        try await expect(Self.textOrOneURL, [Self.text], activated: true)
        try await expect(Self.textOrOneURL, [Self.text, "=public.utf8-plain-text", "=public.html"], activated: true)
        try await expect(Self.textOrOneURL, [fixturePath("files/notes.txt")], activated: true)
        try await expect(Self.textOrOneURL, [Self.webURL], activated: true)
        try await expect(Self.textOrOneURL, [Self.webURL, Self.webURL], activated: false)
        try await expect(Self.textOrOneURL, [Self.heicPhoto, Self.webURL], activated: false)
        try await expect(Self.textOrOneURL, [Self.heicPhoto], activated: false)
    }

    // MARK: - Reasons and JSON

    @Test func theDecidingClauseIsPrinted() async throws {
        let tooMany = try await check(Self.imagesOrMovies.dictionary, [Self.heicPhoto, "=public.png", "=public.jpeg"])
        #expect(tooMany.status == 1)
        #expect(tooMany.stdout == "not activated: NSExtensionActivationSupportsImageWithMaxCount: 3 images > 2\n")

        let pdf = try await check(Self.imagesOnly.dictionary, [fixturePath("files/document.pdf")])
        #expect(pdf.status == 1)
        #expect(pdf.stdout.contains("[com.adobe.pdf]"))

        let predicate = try await check(Self.imagesOnly.predicate, [Self.heicPhoto, "=com.adobe.pdf"])
        #expect(predicate.status == 1)
        #expect(predicate.stdout.contains("attachment 1 [com.adobe.pdf]"))
        #expect(predicate.stdout.contains(#"UTI-CONFORMS-TO "public.image" was false"#))

        let yes = try await check(Self.imagesOnly.dictionary, [Self.heicPhoto])
        #expect(yes.stdout == "activated: NSExtensionActivationSupportsImageWithMaxCount: 1 image <= 10\n")
    }

    @Test func jsonOutputParses() async throws {
        let photo = try await check(Self.imagesOnly.predicate, ["--json", Self.heicPhoto, fixturePath("files/photo.jpg")])
        #expect(photo.status == 0)
        let object = try photo.jsonObject
        #expect(Set(object.keys) == ["activated", "reason", "attachments"])
        #expect(object["activated"] as? Bool == true)
        #expect((object["reason"] as? String)?.isEmpty == false)
        #expect(object["attachments"] as? [[String]] == [["public.heic", "public.jpeg"], ["public.jpeg"]])

        let pdf = try await check(Self.imagesOnly.dictionary, [fixturePath("files/document.pdf"), "--json"])
        #expect(pdf.status == 1)
        let refused = try pdf.jsonObject
        #expect(refused["activated"] as? Bool == false)
        #expect((refused["reason"] as? String)?.contains("com.adobe.pdf") == true)
        #expect(refused["attachments"] as? [[String]] == [["com.adobe.pdf"]])
    }

    // MARK: - Rule sources

    @Test func xmlAndBinaryInfoPlistsAnswerAlike() async throws {
        try await withTemporaryDirectory { directory in
            let rules: [String: Any] = [
                "predicate": Self.imagesOnly.predicate,
                "dictionary": ["NSExtensionActivationSupportsImageWithMaxCount": 10],
            ]
            for (form, rule) in rules {
                let info: [String: Any] = [
                    "CFBundleIdentifier": "com.example.share",
                    "NSExtension": [
                        "NSExtensionPointIdentifier": "com.apple.share-services",
                        "NSExtensionAttributes": ["NSExtensionActivationRule": rule],
                    ] as [String: Any],
                ]
                var paths: [String] = []
                for format in [PropertyListSerialization.PropertyListFormat.xml, .binary] {
                    let data = try PropertyListSerialization.data(fromPropertyList: info, format: format, options: 0)
                    let path = "\(directory)/\(form)-\(format == .xml ? "xml" : "binary")/Info.plist"
                    try writeFile(path, Array(data))
                    paths.append(path)
                }
                let xmlText = try String(contentsOfFile: paths[0], encoding: .utf8)
                #expect(xmlText.hasPrefix("<?xml"))
                #expect(try Data(contentsOf: URL(fileURLWithPath: paths[1])).starts(with: Array("bplist".utf8)))

                for share in [[Self.heicPhoto], [Self.heicPhoto, fixturePath("files/document.pdf")]] {
                    let xml = try await check(paths[0], share)
                    let binary = try await check(paths[1], share)
                    let inline = try await check(form == "predicate" ? Self.imagesOnly.predicate : Self.imagesOnly.dictionary,
                                           share)
                    #expect(xml.status == (share.count == 1 ? 0 : 1), "\(form): \(xml.stdout)\(xml.stderr)")
                    #expect(binary.status == xml.status)
                    #expect(binary.stdout == xml.stdout)
                    #expect(inline.status == xml.status)
                    #expect(inline.stdout == xml.stdout)
                }
            }
        }
    }

    @Test func jsonRuleFileAndInfoPlistShapedJSON() async throws {
        try await withTemporaryDirectory { directory in
            let bare = try writeFile("\(directory)/rule.json", Self.oneWebURL.dictionary)
            let predicate = try writeFile(
                "\(directory)/predicate.json",
                String(decoding: try JSONSerialization.data(withJSONObject: Self.oneWebURL.predicate,
                                                            options: [.fragmentsAllowed]), as: UTF8.self))
            let nested = try writeFile(
                "\(directory)/info.json",
                #"{"NSExtension": {"NSExtensionAttributes": {"NSExtensionActivationRule": "# + Self.oneWebURL.dictionary
                    + "}}}")
            for path in [bare, predicate, nested] {
                #expect(try await check(path, [Self.webURL]).status == 0, "\(path)")
                #expect(try await check(path, [Self.webURL, Self.webURL]).status == 1, "\(path)")
            }
        }
    }

    // MARK: - Malformed rules

    /// A malformed predicate exits 2 with `--rule: position N: expected …`, the usage line, and the predicate with a
    /// caret under the position.
    private func expectSyntaxError(_ predicate: String, at position: Int, expecting expected: String) async throws {
        let result = try await check(predicate, [Self.heicPhoto])
        #expect(result.status == 2, "\(predicate): \(result.stderr)")
        #expect(result.stdout.isEmpty)
        let lines = result.stderr.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines.first?.hasPrefix("error: --rule: position \(position): expected \(expected)") == true,
                "\(result.stderr)")
        #expect(lines.count >= 4)
        guard lines.count >= 4 else { return }
        #expect(lines[1] == "  " + predicate)
        #expect(lines[2] == "  " + String(repeating: " ", count: position) + "^")
        #expect(lines[3].hasPrefix("usage: sharepipe activation check --rule FILE|STRING"))
    }

    @Test func unbalancedParenthesisNamesThePosition() async throws {
        let open = #"SUBQUERY(extensionItems, $e, (ANY $e.attachments.@count > 0).@count == 1"#
        try await expectSyntaxError(
            "(TRUEPREDICATE OR FALSEPREDICATE", at: "(TRUEPREDICATE OR FALSEPREDICATE".count, expecting: #"")""#)
        let result = try await check(open, [Self.heicPhoto])
        #expect(result.status == 2)
        #expect(result.stderr.hasPrefix("error: --rule: position "))

        let extra = "TRUEPREDICATE)"
        let closing = try await check(extra, [Self.heicPhoto])
        #expect(closing.status == 2)
        #expect(closing.stderr.hasPrefix("error: --rule: position 13: "), "\(closing.stderr)")
    }

    @Test func unknownOperatorNamesThePosition() async throws {
        let predicate = "SUBQUERY(extensionItems, $e, TRUEPREDICATE).@count ~= 1"
        let position = predicate.distance(from: predicate.startIndex, to: predicate.firstIndex(of: "~")!)
        let result = try await check(predicate, [Self.heicPhoto])
        #expect(result.status == 2)
        #expect(result.stderr.hasPrefix("error: --rule: position \(position): expected one of =="), "\(result.stderr)")
        #expect(result.stderr.contains("(unsupported operator ~=)\n"))
        #expect(result.stderr.contains("  " + String(repeating: " ", count: position) + "^\n"))

        let matches = #"ANY extensionItems MATCHES "x""#
        let words = try await check(matches, [Self.heicPhoto])
        #expect(words.status == 2)
        #expect(words.stderr.hasPrefix("error: --rule: position 4: expected "), "\(words.stderr)")
    }

    @Test func missingQuoteIsReportedAtTheOpeningQuote() async throws {
        let predicate = #"SUBQUERY(extensionItems, $e, SUBQUERY($e.attachments, $a, "#
            + #"ANY $a.registeredTypeIdentifiers UTI-CONFORMS-TO "public.image).@count >= 1).@count == 1"#
        let position = predicate.distance(from: predicate.startIndex, to: predicate.firstIndex(of: "\"")!)
        let result = try await check(predicate, [Self.heicPhoto])
        #expect(result.status == 2)
        #expect(result.stderr.hasPrefix("error: --rule: position \(position): expected "), "\(result.stderr)")
        #expect(result.stderr.contains("\n  " + predicate + "\n  " + String(repeating: " ", count: position) + "^\n"))
    }

    @Test func malformedDictionaryAndMissingRuleFileAreUsageErrors() async throws {
        let unknownKey = try await check(#"{"NSExtensionActivationSupportsPhotoWithMaxCount": 1}"#, [Self.heicPhoto])
        #expect(unknownKey.status == 2)
        #expect(unknownKey.stderr.hasPrefix(
            "error: --rule: unknown key NSExtensionActivationSupportsPhotoWithMaxCount in NSExtensionActivationRule\n"))
        #expect(!unknownKey.stderr.contains("^"))

        let badCount = try await check(#"{"NSExtensionActivationSupportsImageWithMaxCount": -1}"#, [Self.heicPhoto])
        #expect(badCount.status == 2)
        #expect(badCount.stderr.contains("NSExtensionActivationSupportsImageWithMaxCount"))

        let missing = try await check("/nonexistent/Info.plist", [Self.heicPhoto])
        #expect(missing.status == 2)
        #expect(missing.stderr.hasPrefix("error: --rule: no activation rule file at /nonexistent/Info.plist\n"))

        try await withTemporaryDirectory { directory in
            let noRule = try writeFile("\(directory)/Info.plist", Array(try PropertyListSerialization.data(
                fromPropertyList: ["NSExtension": ["NSExtensionPointIdentifier": "com.apple.share-services"]],
                format: .xml, options: 0)))
            let result = try await check(noRule, [Self.heicPhoto])
            #expect(result.status == 2)
            #expect(result.stderr.contains("NSExtensionAttributes"), "\(result.stderr)")
        }
    }

    // MARK: - Usage

    @Test func usageErrorsExitTwo() async throws {
        let noRule = try await runSharepipe(["activation", "check", Self.heicPhoto])
        #expect(noRule.status == 2)
        #expect(noRule.stderr.hasPrefix("error: --rule: required\nusage: sharepipe activation check --rule"))

        let emptyTypes = try await check(Self.imagesOnly.dictionary, ["photo.jpg="])
        #expect(emptyTypes.status == 2)
        #expect(emptyTypes.stderr.contains(#"ATTACHMENT "photo.jpg=""#))

        let emptyItem = try await check(Self.imagesOnly.dictionary, ["=public.heic,,public.jpeg"])
        #expect(emptyItem.status == 2)
        #expect(emptyItem.stderr.contains("empty item"))

        let missingFile = try await check(Self.imagesOnly.dictionary, ["/nonexistent/photo.jpg"])
        #expect(missingFile.status == 2)
        #expect(missingFile.stderr.contains(#"ATTACHMENT "/nonexistent/photo.jpg": no such file"#))

        let directory = try await check(Self.imagesOnly.dictionary, [fixturePath("files")])
        #expect(directory.status == 2)
        #expect(directory.stderr.contains("not a regular file"))

        try await withTemporaryDirectory { directory in
            let scenario = try writeFile("\(directory)/s.json", #"{"attachments": []}"#)
            let both = try await check(Self.imagesOnly.dictionary, ["--scenario", scenario, Self.heicPhoto])
            #expect(both.status == 2)
            #expect(both.stderr.hasPrefix("error: --scenario: "))
        }

        let help = try await runSharepipe(["activation", "check", "--help"])
        #expect(help.status == 0)
        #expect(help.stdout.contains("--rule FILE|STRING"))
        #expect(help.stdout.contains("ATTACHMENT"))
    }

    @Test func aPathWithAnEqualsSignIsStillAPath() async throws {
        try await withTemporaryDirectory { directory in
            let path = try writeFile("\(directory)/a=b.jpg", jpegBytes)
            let result = try await check(Self.imagesOnly.dictionary, ["--json", path])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(try result.jsonObject["attachments"] as? [[String]] == [["public.jpeg"]])
        }
    }

    @Test func undeclaredTypesWarnAndTypesFileDeclaresThem() async throws {
        try await withTemporaryDirectory { directory in
            let raw = "=com.example.raw-photo"
            let plain = try await check(Self.imagesOnly.dictionary, [raw])
            #expect(plain.status == 1)
            #expect(plain.stderr
                == "warning: attachment 0: \"com.example.raw-photo\" is not a declared type identifier\n")

            let types = try writeFile("\(directory)/types.json", """
                {"UTExportedTypeDeclarations": [{"UTTypeIdentifier": "com.example.raw-photo",
                  "UTTypeConformsTo": ["public.image"], "UTTypeDescription": "raw photo"}]}
                """)
            for rule in [Self.imagesOnly.predicate, Self.imagesOnly.dictionary] {
                let declared = try await check(rule, ["--types", types, raw])
                #expect(declared.status == 0, "\(declared.stdout)\(declared.stderr)")
                #expect(declared.stderr.isEmpty)
            }
        }
    }

    // MARK: - Scenarios

    @Test func scenarioGivesEachAttachmentsDeclaredTypes() async throws {
        try await withTemporaryDirectory { directory in
            try writeFile("\(directory)/a.heic", [UInt8](repeating: 0, count: 16))
            try writeFile("\(directory)/a.jpg", jpegBytes)
            try writeFile("\(directory)/page.txt", "https://example.com/\n")
            let photos = try writeFile("\(directory)/photos.json", """
                { "sourceApp": "com.apple.mobileslideshow",
                  "attachments": [
                    { "suggestedName": "IMG_0001.HEIC",
                      "representations": [
                        { "type": "public.heic", "kind": "file", "path": "a.heic", "afterCallback": "delete" },
                        { "type": "public.jpeg", "kind": "data", "path": "a.jpg" } ] },
                    { "representations": [ { "type": "public.png", "kind": "file", "error": "ERR_LOAD_FAILED" } ] } ] }
                """)
            let withURL = try writeFile("\(directory)/with-url.json", """
                { "attachments": [
                    { "representations": [ { "type": "public.heic", "path": "a.heic" } ] },
                    { "representations": [ { "type": "public.url", "kind": "data", "path": "page.txt" } ] } ] }
                """)
            for rule in [Self.imagesOnly.predicate, Self.imagesOnly.dictionary] {
                let yes = try await check(rule, ["--scenario", photos, "--json"])
                #expect(yes.status == 0, "\(yes.stdout)\(yes.stderr)")
                #expect(try yes.jsonObject["attachments"] as? [[String]] == [["public.heic", "public.jpeg"],
                                                                             ["public.png"]])
                let no = try await check(rule, ["--scenario", withURL])
                #expect(no.status == 1)
                #expect(no.stdout.hasPrefix("not activated: "))
            }
        }
    }

    @Test func malformedScenarioNamesTheKey() async throws {
        try await withTemporaryDirectory { directory in
            let noType = try writeFile("\(directory)/no-type.json", """
                { "attachments": [ { "representations": [ { "kind": "file", "error": "ERR_LOAD_FAILED" } ] } ] }
                """)
            let result = try await check(Self.imagesOnly.dictionary, ["--scenario", noType])
            #expect(result.status == 2)
            #expect(result.stderr.hasPrefix(
                "error: --scenario: attachments[0].representations[0]: missing \"type\"\n"), "\(result.stderr)")

            let noAttachments = try writeFile("\(directory)/empty.json", "{}")
            let empty = try await check(Self.imagesOnly.dictionary, ["--scenario", noAttachments])
            #expect(empty.status == 2)
            #expect(empty.stderr.contains("attachments"))

            let missing = try await check(Self.imagesOnly.dictionary, ["--scenario", "\(directory)/nothing.json"])
            #expect(missing.status == 2)
            #expect(missing.stderr.hasPrefix("error: --scenario: "), "\(missing.stderr)")
            #expect(missing.stderr.contains("nothing.json"))
        }
    }
}
