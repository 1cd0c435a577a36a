import Foundation
import Testing

/// `sharepipe types …` and the command line's general behaviour, through the built binary.
@Suite(.timeLimit(.minutes(5)))
struct TypesCommandTests {
    @Test func showPrintsParentsSupertypesAndTags() async throws {
        let result = try await runSharepipe(["types", "show", "public.jpeg"])
        #expect(result.status == 0)
        #expect(result.stderr.isEmpty)
        let lines = result.stdout.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(lines.first == "public.jpeg")
        #expect(lines.contains { $0.hasPrefix("description") && $0.hasSuffix("JPEG image") })
        #expect(lines.contains { $0.hasPrefix("parents") && $0.hasSuffix(" public.image") })
        #expect(lines.contains { $0.hasPrefix("supertypes") && $0.hasSuffix("public.content, public.item") })
        #expect(lines.contains { $0.hasPrefix("extensions") && $0.contains("jpg") })
        #expect(lines.contains { $0.hasPrefix("MIME types") && $0.contains("image/jpeg") })
    }

    @Test func showJSONHasStableKeys() async throws {
        let result = try await runSharepipe(["types", "show", "--json", "PUBLIC.JPEG"])
        #expect(result.status == 0)
        let object = try result.jsonObject
        #expect(Set(object.keys) == [
            "identifier", "description", "parents", "supertypes", "filenameExtensions", "mimeTypes", "dynamic", "tag",
        ])
        #expect(object["identifier"] as? String == "public.jpeg")
        #expect(object["parents"] as? [String] == ["public.image"])
        let supertypes = try #require(object["supertypes"] as? [String])
        #expect(supertypes.first == "public.image")
        #expect(Set(supertypes) == ["public.image", "public.data", "public.content", "public.item"])
        #expect((object["filenameExtensions"] as? [String])?.contains("jpg") == true)
        #expect((object["mimeTypes"] as? [String])?.contains("image/jpeg") == true)
        #expect(object["dynamic"] as? Bool == false)
        #expect(object["tag"] is NSNull)
    }

    @Test func dynamicTypesShowTheirTag() async throws {
        let lookup = try await runSharepipe(["types", "for-extension", "xyz", "--json"]).jsonObject
        let identifier = try #require(lookup["identifier"] as? String)
        #expect(identifier.hasPrefix("dyn."))
        #expect(lookup["dynamic"] as? Bool == true)

        let shown = try await runSharepipe(["types", "show", identifier, "--json"])
        #expect(shown.status == 0)
        let object = try shown.jsonObject
        #expect(object["dynamic"] as? Bool == true)
        #expect(object["supertypes"] as? [String] == ["public.data", "public.item"])
        #expect(object["filenameExtensions"] as? [String] == ["xyz"])
        let tag = try #require(object["tag"] as? [String: String])
        #expect(tag == ["class": "ext", "value": "xyz"])

        let human = try await runSharepipe(["types", "show", identifier])
        #expect(human.stdout.contains("xyz"))
    }

    @Test func showUnknownTypeFails() async throws {
        let result = try await runSharepipe(["types", "show", "com.example.nothing"])
        #expect(result.status == 1)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr == "error: ERR_NOT_FOUND: unknown type identifier \"com.example.nothing\"\n")
    }

    @Test func conformsExitsZeroOrOne() async throws {
        let yes = try await runSharepipe(["types", "conforms", "public.heic", "public.image"])
        #expect(yes.status == 0)
        #expect(yes.stdout == "public.heic conforms to public.image\n")

        let no = try await runSharepipe(["types", "conforms", "public.jpeg", "public.text"])
        #expect(no.status == 1)
        #expect(no.stdout == "public.jpeg does not conform to public.text\n")

        let json = try await runSharepipe(["types", "conforms", "--json", "public.jpeg", "public.item"])
        #expect(json.status == 0)
        let object = try json.jsonObject
        #expect(object["type"] as? String == "public.jpeg")
        #expect(object["supertype"] as? String == "public.item")
        #expect(object["conforms"] as? Bool == true)
        #expect(try await runSharepipe(["types", "conforms", "public.png", "public.text", "--json"]).jsonObject["conforms"]
            as? Bool == false)

        let typo = try await runSharepipe(["types", "conforms", "public.jpeg", "public.imag"])
        #expect(typo.status == 1)
        #expect(typo.stderr.contains("warning: \"public.imag\" is not a declared type identifier"))
    }

    @Test func forExtensionAndForMIME() async throws {
        #expect(try await runSharepipe(["types", "for-extension", "jpg"]).stdout == "public.jpeg\n")
        #expect(try await runSharepipe(["types", "for-extension", ".PDF"]).stdout == "com.adobe.pdf\n")
        let json = try await runSharepipe(["types", "for-extension", "csv", "--json"])
        #expect(json.status == 0)
        let object = try json.jsonObject
        #expect(Set(object.keys) == ["extension", "identifier", "dynamic"])
        #expect(object["extension"] as? String == "csv")
        #expect(object["identifier"] as? String == "public.comma-separated-values-text")
        #expect(object["dynamic"] as? Bool == false)
        let conforming = try await runSharepipe(["types", "for-extension", "json", "--conforming-to", "public.text"])
        #expect(conforming.stdout == "public.json\n")

        #expect(try await runSharepipe(["types", "for-mime", "image/png"]).stdout == "public.png\n")
        #expect(try await runSharepipe(["types", "for-mime", "text/plain; charset=utf-8"]).stdout == "public.plain-text\n")
        let mime = try await runSharepipe(["types", "for-mime", "--json", "application/x-nothing"]).jsonObject
        #expect(Set(mime.keys) == ["mimeType", "identifier", "dynamic"])
        #expect(mime["dynamic"] as? Bool == true)
        #expect(try await runSharepipe(["types", "for-mime", "png"]).status == 2)
        #expect(try await runSharepipe(["types", "for-extension", "."]).status == 2)
    }

    @Test func sniffReportsMIMETypeAndIdentifier() async throws {
        let photo = try await runSharepipe(["types", "sniff", fixturePath("files/photo.jpg")])
        #expect(photo.status == 0)
        #expect(photo.stdout.contains("image/jpeg") && photo.stdout.contains("public.jpeg"))

        let json = try await runSharepipe(["types", "sniff", "--json", fixturePath("files/image.png")])
        #expect(json.status == 0)
        let object = try json.jsonObject
        #expect(object["mimeType"] as? String == "image/png")
        #expect(object["identifier"] as? String == "public.png")
        #expect(object["dynamic"] as? Bool == false)

        // A file named .jpg holding something else is sniffed for what it is.
        let lying = try await runSharepipe(["types", "sniff", "--json", fixturePath("hostile/lying.jpg")]).jsonObject
        #expect(lying["identifier"] as? String != "public.jpeg")
    }

    @Test func sniffRefusesWhatIsNotARegularFile() async throws {
        try await withTemporaryDirectory { directory in
            let target = try writeFile(directory + "/real.png", pngBytes)
            try FileManager.default.createSymbolicLink(atPath: directory + "/link.png", withDestinationPath: target)
            #expect(mkfifo(directory + "/fifo", 0o600) == 0)
            for path in [directory + "/link.png", directory + "/fifo", directory] {
                let result = try await runSharepipe(["types", "sniff", path], timeout: .seconds(20))
                #expect(result.status == 1, "\(path)")
                #expect(result.stderr.hasPrefix("error: ERR_NOT_REGULAR_FILE"), "\(path): \(result.stderr)")
                #expect(result.stdout.isEmpty)
            }
            let missing = try await runSharepipe(["types", "sniff", directory + "/missing"])
            #expect(missing.status == 1)
            #expect(missing.stderr.hasPrefix("error: ERR_MISSING_FILE"))
        }
    }

    @Test func userDeclarationsFromTypesFile() async throws {
        try await withTemporaryDirectory { directory in
            let declarations = try writeFile(directory + "/types.json", """
                { "UTExportedTypeDeclarations": [ {
                    "UTTypeIdentifier": "com.example.recipe",
                    "UTTypeConformsTo": ["public.json"],
                    "UTTypeDescription": "Recipe",
                    "UTTypeTagSpecification": {
                      "public.filename-extension": ["recipe"], "public.mime-type": ["application/x-recipe"] } } ] }
                """)
            let found = try await runSharepipe(["types", "for-extension", "recipe", "--types", declarations])
            #expect(found.stdout == "com.example.recipe\n")
            let conforms = try await runSharepipe(
                ["types", "conforms", "com.example.recipe", "public.text", "--types=" + declarations])
            #expect(conforms.status == 0)
            let shown = try await runSharepipe(["types", "show", "com.example.recipe", "--json", "--types", declarations])
            #expect(try shown.jsonObject["supertypes"] as? [String] == [
                "public.json", "public.text", "public.data", "public.content", "public.item",
            ])
            #expect(try await runSharepipe(["types", "for-extension", "recipe"]).stdout.hasPrefix("dyn."))

            let broken = try writeFile(directory + "/broken.json", """
                { "UTExportedTypeDeclarations": [ { "UTTypeIdentifier": "com.example.a",
                  "UTTypeConformsTo": ["com.example.missing"] } ] }
                """)
            let failure = try await runSharepipe(["types", "show", "public.jpeg", "--types", broken])
            #expect(failure.status == 2)
            #expect(failure.stderr.hasPrefix("error: --types: "))
            #expect(failure.stderr.contains("com.example.missing"))
        }
    }

    @Test func usageErrorsExitTwoWithOneLineAndTheUsage() async throws {
        let cases: [([String], String, String)] = [
            (["frobnicate"], "error: unknown command \"frobnicate\"", "usage: sharepipe COMMAND [options]"),
            (["types", "show", "public.jpeg", "--frob"], "error: unknown option --frob",
             "usage: sharepipe types show [options] TYPE"),
            (["types", "conforms", "public.jpeg"], "error: missing SUPERTYPE",
             "usage: sharepipe types conforms [options] TYPE SUPERTYPE"),
            (["types", "show", "a", "b"], "error: unexpected argument \"b\"", "usage: sharepipe types show"),
            (["types", "show", "public.jpeg", "--types"], "error: --types: missing value (expected FILE)",
             "usage: sharepipe types show"),
            (["types", "show", "public.jpeg", "--json=1"], "error: --json: takes no value", "usage:"),
            (["types", "bogus"], "error: types: unknown command \"bogus\"", "usage: sharepipe types COMMAND"),
        ]
        for (arguments, error, usage) in cases {
            let result = try await runSharepipe(arguments)
            #expect(result.status == 2, "\(arguments)")
            #expect(result.stdout.isEmpty, "\(arguments)")
            let lines = result.stderr.split(separator: "\n", omittingEmptySubsequences: false)
            #expect(lines.count == 3 && lines[2].isEmpty, "\(arguments): \(result.stderr)")
            #expect(lines.first?.hasPrefix(error) == true, "\(arguments): \(result.stderr)")
            #expect(lines.dropFirst().first?.hasPrefix(usage) == true, "\(arguments): \(result.stderr)")
        }
    }

    @Test func helpListsEveryFlagAndVersionPrintsOnce() async throws {
        let subcommands: [(String, [String])] = [
            ("show", ["TYPE"]), ("conforms", ["TYPE", "SUPERTYPE"]), ("for-extension", ["EXT", "--conforming-to TYPE"]),
            ("for-mime", ["MIME", "--conforming-to TYPE"]), ("sniff", ["FILE"]),
        ]
        for (name, extra) in subcommands {
            let result = try await runSharepipe(["types", name, "--help"])
            #expect(result.status == 0, "\(name)")
            #expect(result.stdout.hasPrefix("usage: sharepipe types \(name) [options]"), "\(name)")
            for expected in ["--json", "--types FILE", "-h, --help"] + extra {
                #expect(result.stdout.contains(expected), "\(name) help lacks \(expected)")
            }
            #expect(try await runSharepipe(["help", "types", name]).stdout == result.stdout)
        }
        let group = try await runSharepipe(["types", "--help"])
        #expect(group.status == 0)
        for (name, _) in subcommands { #expect(group.stdout.contains("  \(name) ")) }

        for arguments in [["help"], ["--help"]] {
            let top = try await runSharepipe(arguments)
            #expect(top.status == 0)
            #expect(top.stdout.hasPrefix("usage: sharepipe COMMAND [options]"))
            for (name, _) in subcommands { #expect(top.stdout.contains("  types \(name) ")) }
        }

        let version = try await runSharepipe(["--version"])
        #expect(version.status == 0)
        #expect(version.stdout.wholeMatch(of: /sharepipe \d+\.\d+\.\d+\n/) != nil)
        #expect(version.stderr.isEmpty)
    }
}
