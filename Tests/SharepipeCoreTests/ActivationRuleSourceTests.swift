import Foundation
import Testing
@testable import SharepipeCore
@testable import SharepipeDaemon
@testable import SharepipeIngest
@testable import SharepipeLedger
@testable import SharepipeSpool
@testable import SharepipeSystem

@Suite struct ActivationRuleSourceTests {
    let registry = TypeRegistry.standard

    static var imageRule: [String: Any] {
        [
            "NSExtensionActivationSupportsImageWithMaxCount": 2,
            "NSExtensionActivationSupportsText": true,
            "NSExtensionActivationDictionaryVersion": 2,
            "NSExtensionActivationUsesStrictMatching": true,
        ]
    }

    static let imagePredicate = "SUBQUERY(extensionItems, $e, SUBQUERY($e.attachments, $a, "
        + "ANY $a.registeredTypeIdentifiers UTI-CONFORMS-TO \"public.image\").@count == $e.attachments.@count)"
        + ".@count == 1"

    static let shares: [[[String]]] = [
        [ShareFixtures.heicPhoto],
        [ShareFixtures.heicPhoto, ShareFixtures.jpeg],
        [ShareFixtures.jpeg, ShareFixtures.png, ShareFixtures.heicPhoto],
        [ShareFixtures.pdf],
        [ShareFixtures.heicPhoto, ShareFixtures.text],
    ]

    /// An extension's Info.plist holding `rule`, as a real one nests it.
    static func infoPlist(rule: Any) -> [String: Any] {
        [
            "CFBundleIdentifier": "com.example.app.share",
            "NSExtension": [
                "NSExtensionPointIdentifier": "com.apple.share-services",
                "NSExtensionAttributes": ["NSExtensionActivationRule": rule],
            ] as [String: Any],
        ]
    }

    func write(_ document: Any, format: PropertyListSerialization.PropertyListFormat, to path: String) throws {
        let data = try PropertyListSerialization.data(fromPropertyList: document, format: format, options: 0)
        try writeFile(path, Array(data))
    }

    func results(_ rule: ActivationRule) -> [ActivationResult] {
        Self.shares.map { rule.evaluate($0, registry: registry) }
    }

    @Test(arguments: [true, false])
    func xmlAndBinaryInfoPlistsReadAlike(dictionaryForm: Bool) async throws {
        try await withTemporaryDirectory { dir in
            let rule: Any = dictionaryForm ? Self.imageRule : Self.imagePredicate
            try write(Self.infoPlist(rule: rule), format: .xml, to: dir + "/xml.plist")
            try write(Self.infoPlist(rule: rule), format: .binary, to: dir + "/Info.plist")
            let xmlBytes = try Data(contentsOf: URL(fileURLWithPath: dir + "/xml.plist"))
            let binaryBytes = try Data(contentsOf: URL(fileURLWithPath: dir + "/Info.plist"))
            #expect(xmlBytes.starts(with: Array("<?xml".utf8)))
            #expect(binaryBytes.starts(with: Array("bplist".utf8)))

            let fromXML = try ActivationRule.load(from: dir + "/xml.plist")
            let fromBinary = try ActivationRule.load(from: dir + "/Info.plist")
            #expect(fromXML == fromBinary)
            #expect(results(fromXML) == results(fromBinary))
            // The dictionary allows at most 2 images, and text beside them; the predicate any number of images only.
            let expected = dictionaryForm ? [true, true, false, false, true] : [true, true, true, false, false]
            #expect(results(fromXML).map(\.activated) == expected)
        }
    }

    @Test func jsonFilesHoldTheRuleOrTheInfoPlistNesting() async throws {
        try await withTemporaryDirectory { dir in
            let ruleData = try JSONSerialization.data(withJSONObject: Self.imageRule)
            try writeFile(dir + "/rule.json", Array(ruleData))
            let nestedData = try JSONSerialization.data(withJSONObject: Self.infoPlist(rule: Self.imageRule))
            try writeFile(dir + "/info.json", Array(nestedData))
            let predicateData = try JSONSerialization.data(
                withJSONObject: Self.imagePredicate, options: .fragmentsAllowed)
            try writeFile(dir + "/predicate.json", Array(predicateData))

            let direct = try ActivationRule.load(from: dir + "/rule.json")
            let nested = try ActivationRule.load(from: dir + "/info.json")
            #expect(direct == nested)
            #expect(results(direct).map(\.activated) == [true, true, false, false, true])
            let inline = try ActivationRule.load(from: Self.imagePredicate)
            #expect(try ActivationRule.load(from: dir + "/predicate.json") == inline)
        }
    }

    @Test func jsonBooleansAreNotCounts() async throws {
        try await withTemporaryDirectory { dir in
            try writeFile(dir + "/rule.json", #"{"NSExtensionActivationSupportsImageWithMaxCount": true}"#)
            let error = #expect(throws: ActivationRuleError.self) { try ActivationRule.load(from: dir + "/rule.json") }
            #expect(error?.message
                == "NSExtensionActivationSupportsImageWithMaxCount must be a non-negative integer, found true")
        }
    }

    @Test func inlineJSONAndInlinePredicates() throws {
        let inline = try ActivationRule.load(from: #" {"NSExtensionActivationSupportsWebURLWithMaxCount": 1} "#)
        #expect(inline.evaluate([ShareFixtures.webURL], registry: registry).activated)
        #expect(!inline.evaluate([ShareFixtures.webURL, ShareFixtures.webURL], registry: registry).activated)
        let predicate = try ActivationRule.load(from: "\n    TRUEPREDICATE\n")
        #expect(predicate.evaluate([], registry: registry).activated)
    }

    @Test func unknownKeysInAnInfoPlistAreErrors() async throws {
        try await withTemporaryDirectory { dir in
            let rule = ["NSExtensionActivationSupportsAttachmentsWithMatchingTypeIdentifiers": ["public.url"]]
            try write(Self.infoPlist(rule: rule), format: .xml, to: dir + "/Info.plist")
            let error = #expect(throws: ActivationRuleError.self) { try ActivationRule.load(from: dir + "/Info.plist") }
            #expect(error?.message == "unknown key NSExtensionActivationSupportsAttachmentsWithMatchingTypeIdentifiers"
                + " in NSExtensionActivationRule")
        }
    }

    @Test func missingFilesAndMissingRulesAreNamed() async throws {
        try await withTemporaryDirectory { dir in
            let missing = #expect(throws: ActivationRuleError.self) {
                try ActivationRule.load(from: dir + "/nope.plist")
            }
            #expect(missing?.message == "no activation rule file at \(dir)/nope.plist")

            try write(["NSExtension": ["NSExtensionAttributes": ["NSExtensionJavaScriptPreprocessingFile": "Action"]]],
                      format: .binary, to: dir + "/Info.plist")
            let noRule = #expect(throws: ActivationRuleError.self) {
                try ActivationRule.load(from: dir + "/Info.plist")
            }
            #expect(noRule?.message
                == "\(dir)/Info.plist has no NSExtension → NSExtensionAttributes → NSExtensionActivationRule")

            try writeFile(dir + "/garbage.json", "not json at all")
            #expect(throws: ActivationRuleError.self) { try ActivationRule.load(from: dir + "/garbage.json") }
            #expect(throws: ActivationRuleError.self) { try ActivationRule.load(from: "   ") }
        }
    }
}
