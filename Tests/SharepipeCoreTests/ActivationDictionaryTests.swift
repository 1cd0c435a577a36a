import Foundation
import Testing
@testable import SharepipeCore
@testable import SharepipeDaemon
@testable import SharepipeIngest
@testable import SharepipeLedger
@testable import SharepipeSpool
@testable import SharepipeSystem

/// Attachments as a share extension sees them: registered type identifiers, highest fidelity first.
enum ShareFixtures {
    static let heicPhoto = ["public.heic", "public.jpeg"]
    static let jpeg = ["public.jpeg"]
    static let png = ["public.png"]
    static let movie = ["public.movie"]
    static let text = ["public.plain-text"]
    static let webURL = ["public.url"]
    static let webPage = ["public.url", "com.apple.active-webpage"]
    static let fileURL = ["public.file-url"]
    static let pdf = ["com.adobe.pdf"]
}

@Suite struct ActivationDictionaryTests {
    let registry = TypeRegistry.standard

    func rule(_ dictionary: [String: Any]) throws -> ActivationRule {
        ActivationRule(form: .dictionary(try ActivationDictionary(dictionary)))
    }

    func evaluate(_ dictionary: [String: Any], _ attachments: [[String]]) throws -> ActivationResult {
        try rule(dictionary).evaluate(attachments, registry: registry)
    }

    static let countedKeys: [(key: String, attachment: [String], noun: String)] = [
        (ActivationDictionary.imageKey, ShareFixtures.jpeg, "images"),
        (ActivationDictionary.movieKey, ShareFixtures.movie, "movies"),
        (ActivationDictionary.fileKey, ShareFixtures.pdf, "files"),
        (ActivationDictionary.webURLKey, ShareFixtures.webURL, "web URLs"),
        (ActivationDictionary.webPageKey, ShareFixtures.webPage, "web pages"),
    ]

    @Test(arguments: countedKeys)
    func eachMaxCountKeyHoldsUnderAtAndOverItsLimit(key: String, attachment: [String], noun: String) throws {
        let under = try evaluate([key: 2], [attachment])
        #expect(under.activated, "\(under)")
        let at = try evaluate([key: 2], [attachment, attachment])
        #expect(at.activated, "\(at)")
        #expect(at.reason == "\(key): 2 \(noun) <= 2")
        let over = try evaluate([key: 2], [attachment, attachment, attachment])
        #expect(!over.activated)
        #expect(over.reason == "\(key): 3 \(noun) > 2")
    }

    @Test func imageLimitReasonReadsAsDocumented() throws {
        let share = [ShareFixtures.jpeg, ShareFixtures.png, ShareFixtures.heicPhoto]
        let result = try evaluate([ActivationDictionary.imageKey: 2], share)
        #expect(result.description == "not activated: NSExtensionActivationSupportsImageWithMaxCount: 3 images > 2")
    }

    @Test func textIsABooleanWithoutMaximum() throws {
        let five = Array(repeating: ShareFixtures.text, count: 5)
        #expect(try evaluate([ActivationDictionary.textKey: true], five).activated)
        #expect(try evaluate([ActivationDictionary.textKey: true], [ShareFixtures.text]).reason
            == "NSExtensionActivationSupportsText: 1 text attachment")
        #expect(!(try evaluate([ActivationDictionary.textKey: false], [ShareFixtures.text]).activated))
        #expect(!(try evaluate([ActivationDictionary.textKey: true], [ShareFixtures.jpeg]).activated))
    }

    @Test func minimumAttachmentCountUnderAtAndOver() throws {
        let rule: [String: Any] = [ActivationDictionary.minAttachmentsKey: 2, ActivationDictionary.imageKey: 5]
        let under = try evaluate(rule, [ShareFixtures.jpeg])
        #expect(!under.activated)
        #expect(under.reason == "NSExtensionActivationSupportsAttachmentsWithMinCount: 1 attachment < 2")
        #expect(try evaluate(rule, [ShareFixtures.jpeg, ShareFixtures.png]).activated)
        #expect(try evaluate(rule, [ShareFixtures.jpeg, ShareFixtures.png, ShareFixtures.jpeg]).activated)
    }

    @Test func maximumAttachmentCountUnderAtAndOver() throws {
        let rule: [String: Any] = [ActivationDictionary.maxAttachmentsKey: 2, ActivationDictionary.imageKey: 5]
        #expect(try evaluate(rule, [ShareFixtures.jpeg]).activated)
        #expect(try evaluate(rule, [ShareFixtures.jpeg, ShareFixtures.png]).activated)
        let over = try evaluate(rule, [ShareFixtures.jpeg, ShareFixtures.png, ShareFixtures.jpeg])
        #expect(!over.activated)
        #expect(over.reason == "NSExtensionActivationSupportsAttachmentsWithMaxCount: 3 attachments > 2")
    }

    @Test func attachmentBoundsAloneAllowNoType() throws {
        let result = try evaluate([ActivationDictionary.maxAttachmentsKey: 5], [ShareFixtures.jpeg])
        #expect(!result.activated)
        #expect(result.reason.contains("attachment 0 [public.jpeg] is an image"))
    }

    @Test func versionOneAlwaysMatchesStrictly() throws {
        let share = [ShareFixtures.jpeg, ShareFixtures.pdf]
        let implicit = try evaluate([ActivationDictionary.imageKey: 2], share)
        #expect(!implicit.activated)
        #expect(implicit.reason == "strict matching (dictionary version 1 always matches strictly): "
            + "attachment 1 [com.adobe.pdf] is a file, and no key allows it")
        let askedFuzzy = try evaluate(
            [ActivationDictionary.imageKey: 2, ActivationDictionary.strictMatchingKey: false], share)
        #expect(!askedFuzzy.activated)
    }

    @Test func versionTwoMatchesFuzzilyUnlessStrictIsRequested() throws {
        let share = [ShareFixtures.jpeg, ShareFixtures.pdf]
        let fuzzy = try evaluate([ActivationDictionary.imageKey: 2, ActivationDictionary.versionKey: 2], share)
        #expect(fuzzy.activated)
        #expect(fuzzy.reason == "NSExtensionActivationSupportsImageWithMaxCount: 1 image <= 2; "
            + "fuzzy matching ignores attachment 1")
        let strict = try evaluate(
            [ActivationDictionary.imageKey: 2, ActivationDictionary.versionKey: 2,
             ActivationDictionary.strictMatchingKey: true], share)
        #expect(!strict.activated)
        #expect(strict.reason == "NSExtensionActivationUsesStrictMatching: "
            + "attachment 1 [com.adobe.pdf] is a file, and no key allows it")
    }

    @Test func fuzzyMatchingNeedsOneCoveredAttachmentAndStillHoldsLimits() throws {
        let rule: [String: Any] = [ActivationDictionary.imageKey: 1, ActivationDictionary.versionKey: 2]
        let none = try evaluate(rule, [ShareFixtures.pdf])
        #expect(!none.activated)
        #expect(none.reason == "no attachment matches a key that allows it: attachment 0 [com.adobe.pdf] is a file")
        let over = try evaluate(rule, [ShareFixtures.jpeg, ShareFixtures.jpeg, ShareFixtures.pdf])
        #expect(!over.activated)
        #expect(over.reason == "NSExtensionActivationSupportsImageWithMaxCount: 2 images > 1")
    }

    @Test func aKeyAtZeroRefusesItsKindEvenWhenFuzzy() throws {
        let rule: [String: Any] = [
            ActivationDictionary.imageKey: 2, ActivationDictionary.movieKey: 0, ActivationDictionary.versionKey: 2,
        ]
        let result = try evaluate(rule, [ShareFixtures.jpeg, ShareFixtures.movie])
        #expect(!result.activated)
        #expect(result.reason == "NSExtensionActivationSupportsMovieWithMaxCount is 0: "
            + "attachment 1 [public.movie] is a movie and a file, and no other key allows it")
        #expect(try evaluate(rule, [ShareFixtures.jpeg, ShareFixtures.pdf]).activated)
    }

    @Test func versionTwoFileCountIncludesImagesAndMovies() throws {
        let photo = [ShareFixtures.heicPhoto]
        #expect(!(try evaluate([ActivationDictionary.fileKey: 2], photo).activated))
        let versionTwo = try evaluate([ActivationDictionary.fileKey: 2, ActivationDictionary.versionKey: 2], photo)
        #expect(versionTwo.activated)
        #expect(versionTwo.reason.contains("NSExtensionActivationSupportsFileWithMaxCount: 1 file <= 2"))

        let twoImages = [ShareFixtures.jpeg, ShareFixtures.heicPhoto]
        let both: [String: Any] = [ActivationDictionary.fileKey: 1, ActivationDictionary.imageKey: 5]
        #expect(try evaluate(both, twoImages).activated)
        var both2 = both
        both2[ActivationDictionary.versionKey] = 2
        let counted = try evaluate(both2, twoImages)
        #expect(!counted.activated)
        #expect(counted.reason == "NSExtensionActivationSupportsFileWithMaxCount: 2 files > 1")
    }

    @Test func webURLsAreNotFileURLs() throws {
        let result = try evaluate([ActivationDictionary.webURLKey: 1], [ShareFixtures.fileURL])
        #expect(!result.activated)
        #expect(try evaluate([ActivationDictionary.fileKey: 1], [ShareFixtures.fileURL]).activated)
    }

    @Test func anEmptyShareNeverActivates() throws {
        let result = try evaluate([ActivationDictionary.imageKey: 1], [])
        #expect(result == ActivationResult(activated: false, reason: "the share has no attachments"))
    }

    @Test func unknownKeysAreErrors() {
        let error = #expect(throws: ActivationRuleError.self) {
            try ActivationDictionary(["NSExtensionActivationSupportsImagesWithMaxCount": 1])
        }
        #expect(error?.message
            == "unknown key NSExtensionActivationSupportsImagesWithMaxCount in NSExtensionActivationRule")
        #expect(error?.position == -1)
    }

    @Test(arguments: [
        (ActivationDictionary.imageKey, "2" as any Sendable, "found the string \"2\""),
        (ActivationDictionary.imageKey, true as any Sendable, "found true"),
        (ActivationDictionary.imageKey, -1 as any Sendable, "found -1"),
        (ActivationDictionary.imageKey, 1.5 as any Sendable, "found 1.5"),
        (ActivationDictionary.textKey, 5 as any Sendable, "found 5"),
        (ActivationDictionary.strictMatchingKey, "yes" as any Sendable, "found the string \"yes\""),
        (ActivationDictionary.versionKey, 3 as any Sendable, "found 3"),
    ] as [(String, any Sendable, String)])
    func wrongValueTypesNameTheKey(key: String, value: any Sendable, found: String) {
        let error = #expect(throws: ActivationRuleError.self) { try ActivationDictionary([key: value as Any]) }
        #expect(error?.message.hasPrefix(key + " must be ") == true)
        #expect(error?.message.hasSuffix(found) == true, "\(String(describing: error))")
    }

    @Test func booleanKeysAcceptZeroAndOne() throws {
        let rule = try ActivationDictionary(
            [ActivationDictionary.textKey: 1, ActivationDictionary.strictMatchingKey: 0])
        #expect(rule.limits[.text] == Int.max)
        #expect(!rule.strictMatchingRequested)
    }
}
