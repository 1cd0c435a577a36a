import Testing
@testable import SharepipeCore
@testable import SharepipeDaemon
@testable import SharepipeIngest
@testable import SharepipeLedger
@testable import SharepipeSpool
@testable import SharepipeSystem

@Suite struct ActivationPredicateTests {
    let registry = TypeRegistry.standard

    /// (a) every attachment is an image, and there is at least one.
    static let imagesOnly = """
        SUBQUERY(extensionItems, $extensionItem,
            SUBQUERY($extensionItem.attachments, $attachment,
                ANY $attachment.registeredTypeIdentifiers UTI-CONFORMS-TO "public.image"
            ).@count == $extensionItem.attachments.@count
            AND $extensionItem.attachments.@count >= 1
        ).@count >= 1
        """

    /// (b) exactly one attachment, and it is a web URL.
    static let oneWebURL = """
        SUBQUERY(extensionItems, $extensionItem,
            SUBQUERY($extensionItem.attachments, $attachment,
                ANY $attachment.registeredTypeIdentifiers UTI-CONFORMS-TO 'public.url'
                && !(ANY $attachment.registeredTypeIdentifiers UTI-CONFORMS-TO 'public.file-url')
            ).@count = 1
            && $extensionItem.attachments.@count == 1
        ).@count == 1
        """

    /// (c) images or movies only, at most 2 of each and 4 in all.
    static let imagesOrMovies = """
        subquery(extensionItems, $item,
            subquery($item.attachments, $a,
                any $a.registeredTypeIdentifiers uti-conforms-to "public.image").@count <= 2
            and subquery($item.attachments, $a,
                any $a.registeredTypeIdentifiers uti-conforms-to "public.movie").@count <= 2
            and subquery($item.attachments, $a,
                    any $a.registeredTypeIdentifiers uti-conforms-to "public.image"
                    or any $a.registeredTypeIdentifiers uti-conforms-to "public.movie"
                ).@count == $item.attachments.@count
            and $item.attachments.@count >= 1 and $item.attachments.@count <= 4
        ).@count >= 1
        """

    /// (d) some text, or exactly one URL.
    static let textOrOneURL = """
        SUBQUERY(extensionItems, $extensionItem,
            SUBQUERY($extensionItem.attachments, $attachment,
                ANY $attachment.registeredTypeIdentifiers UTI-CONFORMS-TO "public.text").@count >= 1
            OR (SUBQUERY($extensionItem.attachments, $attachment,
                    ANY $attachment.registeredTypeIdentifiers UTI-CONFORMS-TO "public.url").@count == 1
                AND $extensionItem.attachments.@count == 1)
        ).@count >= 1
        """

    func evaluate(_ predicate: String, _ attachments: [[String]]) throws -> ActivationResult {
        try ActivationRule.load(from: predicate).evaluate(attachments, registry: registry)
    }

    func activated(_ predicate: String, _ attachments: [[String]]) throws -> Bool {
        try evaluate(predicate, attachments).activated
    }

    /// Where `needle` first starts in `text`, in characters.
    func offset(of needle: String, in text: String, after earlier: String? = nil) throws -> Int {
        var searchFrom = text.startIndex
        if let earlier { searchFrom = try #require(text.range(of: earlier)).upperBound }
        let range = try #require(text.range(of: needle, range: searchFrom..<text.endIndex))
        return text.distance(from: text.startIndex, to: range.lowerBound)
    }

    func error(_ predicate: String) -> ActivationRuleError? {
        #expect(throws: ActivationRuleError.self) { try ActivationRule.load(from: predicate) }
    }

    @Test func imagesOnlyAcceptsPhotosAndRefusesAPDF() throws {
        #expect(try activated(Self.imagesOnly, [ShareFixtures.heicPhoto]))
        #expect(try activated(Self.imagesOnly, [ShareFixtures.jpeg, ShareFixtures.png, ShareFixtures.heicPhoto]))
        #expect(!(try activated(Self.imagesOnly, [ShareFixtures.pdf])))
        #expect(!(try activated(Self.imagesOnly, [ShareFixtures.heicPhoto, ShareFixtures.webURL])))
        #expect(!(try activated(Self.imagesOnly, [])))

        let refused = try evaluate(Self.imagesOnly, [ShareFixtures.heicPhoto, ShareFixtures.pdf])
        #expect(!refused.activated)
        #expect(refused.reason == "SUBQUERY(extensionItems, $extensionItem, …).@count >= 1 was false (0), "
            + "because in extension item 0: SUBQUERY($extensionItem.attachments, $attachment, …).@count "
            + "== $extensionItem.attachments.@count was false (1 vs 2), "
            + "because in attachment 1 [com.adobe.pdf]: ANY $attachment.registeredTypeIdentifiers "
            + "UTI-CONFORMS-TO \"public.image\" was false")
        let accepted = try evaluate(Self.imagesOnly, [ShareFixtures.heicPhoto])
        #expect(accepted.reason.contains(
            "because in attachment 0 [public.heic, public.jpeg]: ANY $attachment.registeredTypeIdentifiers "
                + "UTI-CONFORMS-TO \"public.image\" was true (public.heic)"))
    }

    @Test func oneWebURLAcceptsExactlyOneURL() throws {
        #expect(try activated(Self.oneWebURL, [ShareFixtures.webURL]))
        #expect(try activated(Self.oneWebURL, [ShareFixtures.webPage]))
        #expect(!(try activated(Self.oneWebURL, [ShareFixtures.webURL, ShareFixtures.webURL])))
        #expect(!(try activated(Self.oneWebURL, [ShareFixtures.heicPhoto, ShareFixtures.webURL])))
        #expect(!(try activated(Self.oneWebURL, [ShareFixtures.fileURL])))
        #expect(!(try activated(Self.oneWebURL, [ShareFixtures.heicPhoto])))
    }

    @Test func imagesOrMoviesAtMostTwoOfEach() throws {
        #expect(try activated(Self.imagesOrMovies, [ShareFixtures.heicPhoto, ShareFixtures.movie]))
        let twoOfEach = [ShareFixtures.jpeg, ShareFixtures.heicPhoto, ShareFixtures.movie, ShareFixtures.movie]
        #expect(try activated(Self.imagesOrMovies, twoOfEach))
        let threeImages = try evaluate(
            Self.imagesOrMovies, [ShareFixtures.jpeg, ShareFixtures.png, ShareFixtures.heicPhoto])
        #expect(!threeImages.activated)
        #expect(threeImages.reason.contains("uti-conforms-to") == false)
        #expect(threeImages.reason.contains("SUBQUERY($item.attachments, $a, …).@count <= 2 was false (3)"))
        #expect(!(try activated(Self.imagesOrMovies, [ShareFixtures.movie, ShareFixtures.movie, ShareFixtures.movie])))
        #expect(!(try activated(Self.imagesOrMovies, [ShareFixtures.jpeg, ShareFixtures.pdf])))
        #expect(!(try activated(Self.imagesOrMovies, [ShareFixtures.heicPhoto, ShareFixtures.webURL])))
    }

    @Test func textOrOneURL() throws {
        #expect(try activated(Self.textOrOneURL, [ShareFixtures.text]))
        #expect(try activated(Self.textOrOneURL, [ShareFixtures.text, ShareFixtures.webURL]))
        #expect(try activated(Self.textOrOneURL, [ShareFixtures.webURL]))
        #expect(!(try activated(Self.textOrOneURL, [ShareFixtures.webURL, ShareFixtures.webURL])))
        #expect(!(try activated(Self.textOrOneURL, [ShareFixtures.heicPhoto, ShareFixtures.webURL])))
        #expect(!(try activated(Self.textOrOneURL, [ShareFixtures.pdf])))
    }

    @Test func conformanceComesFromTheRegistry() throws {
        let rule = "SUBQUERY(extensionItems, $e, SUBQUERY($e.attachments, $a, "
            + "ANY $a.registeredTypeIdentifiers UTI-CONFORMS-TO \"public.image\").@count >= 1).@count >= 1"
        #expect(try activated(rule, [["public.heic"]]))
        #expect(try activated(rule, [["PUBLIC.HEIC"]]))
        #expect(!(try activated(rule, [["public.movie"]])))
    }

    @Test func utiEqualsIsExact() throws {
        func rule(_ type: String) -> String {
            "SUBQUERY(extensionItems, $e, SUBQUERY($e.attachments, $a, "
                + "ANY $a.registeredTypeIdentifiers UTI-EQUALS \"\(type)\").@count == 1).@count == 1"
        }
        #expect(!(try activated(rule("public.image"), [ShareFixtures.heicPhoto])))
        #expect(try activated(rule("public.heic"), [ShareFixtures.heicPhoto]))
        #expect(try activated(rule("public.jpeg"), [ShareFixtures.heicPhoto]))
        #expect(try activated(rule("Public.HEIC"), [ShareFixtures.heicPhoto]))
    }

    @Test func aSubqueryCanWalkTypeIdentifiers() throws {
        let rule = """
            SUBQUERY(extensionItems, $e, SUBQUERY($e.attachments, $a,
                SUBQUERY($a.registeredTypeIdentifiers, $uti, $uti UTI-CONFORMS-TO "public.image").@count > 0
            ).@count == $e.attachments.@count).@count == 1
            """
        #expect(try activated(rule, [ShareFixtures.heicPhoto, ShareFixtures.png]))
        #expect(!(try activated(rule, [ShareFixtures.heicPhoto, ShareFixtures.text])))
    }

    @Test func constantsOperatorsAndAliases() throws {
        #expect(try activated("TRUEPREDICATE", []))
        #expect(try evaluate("truepredicate", []).reason == "TRUEPREDICATE is always true")
        #expect(!(try activated("FALSEPREDICATE", [ShareFixtures.jpeg])))
        #expect(try activated("NOT FALSEPREDICATE", []))
        #expect(try activated("!(FALSEPREDICATE || FALSEPREDICATE) && TRUEPREDICATE", []))
        #expect(!(try activated("TRUEPREDICATE and not TRUEPREDICATE", [])))
        let count = "SUBQUERY(extensionItems, $e, $e.attachments.@count "
        #expect(try activated(count + "<> 0).@count == 1", [ShareFixtures.jpeg]))
        #expect(try activated(count + "=< 1).@count =< 1", [ShareFixtures.jpeg]))
        #expect(try activated(count + "=> 2).@count < 1", [ShareFixtures.jpeg]))
        #expect(try activated("1 <= " + count + "> 0).@count", [ShareFixtures.jpeg]))
        #expect(try activated("extensionItems.@count == 1", []))
    }

    @Test func unbalancedParenthesesNameThePosition() throws {
        let open = error("(TRUEPREDICATE")
        #expect(open?.position == 14)
        #expect(open?.expected == "\")\"")
        #expect(open?.message == "position 14: expected \")\", found end of predicate")

        let close = error("TRUEPREDICATE)")
        #expect(close?.position == 13)
        #expect(close?.expected == "AND, OR or end of predicate")

        // The inner SUBQUERY loses its closing parenthesis: the error points where it was expected.
        let nested = Self.imagesOnly.replacingOccurrences(
            of: ").@count == $extensionItem", with: ".@count == $extensionItem")
        let nestedError = error(nested)
        #expect(nestedError?.position == (try offset(of: ".@count == $extensionItem", in: nested)))
        #expect(nestedError?.expected == "\")\"")
        #expect(nestedError?.message.hasSuffix("expected \")\", found \".\"") == true)
    }

    @Test func unknownOperatorsAreRefusedAtTheirPosition() throws {
        let matches = "SUBQUERY(extensionItems, $e, SUBQUERY($e.attachments, $a, "
            + "ANY $a.registeredTypeIdentifiers MATCHES \"public.*\").@count >= 1).@count >= 1"
        let matchesError = error(matches)
        #expect(matchesError?.position == (try offset(of: "MATCHES", in: matches)))
        #expect(matchesError?.message
            == "unsupported operator MATCHES at position \(try offset(of: "MATCHES", in: matches))")
        #expect(matchesError?.expected == "UTI-CONFORMS-TO or UTI-EQUALS")

        let tilde = "SUBQUERY(extensionItems, $e, TRUEPREDICATE).@count ~= 1"
        let tildeError = error(tilde)
        #expect(tildeError?.position == (try offset(of: "~=", in: tilde)))
        #expect(tildeError?.message.hasPrefix("unsupported operator ~=") == true)

        let beginsWith = "SUBQUERY(extensionItems, $e, TRUEPREDICATE).@count BEGINSWITH 1"
        #expect(error(beginsWith)?.position == (try offset(of: "BEGINSWITH", in: beginsWith)))

        let typo = "SUBQUERY(extensionItems, $e, SUBQUERY($e.attachments, $a, "
            + "ANY $a.registeredTypeIdentifiers UTI-CONFORMS \"public.image\").@count >= 1).@count >= 1"
        let typoError = error(typo)
        #expect(typoError?.position == (try offset(of: "UTI-CONFORMS", in: typo)))
        #expect(typoError?.message.hasPrefix("unsupported operator UTI-CONFORMS at position") == true)
    }

    @Test func aMissingClosingQuoteNamesTheOpeningQuote() throws {
        let rule = "SUBQUERY(extensionItems, $e, SUBQUERY($e.attachments, $a, "
            + "ANY $a.registeredTypeIdentifiers UTI-CONFORMS-TO \"public.image).@count >= 1).@count >= 1"
        let quoteError = error(rule)
        #expect(quoteError?.position == (try offset(of: "\"", in: rule)))
        #expect(quoteError?.expected.hasPrefix("closing \"") == true)

        let single = "ANY $a.registeredTypeIdentifiers UTI-EQUALS 'public.url"
        #expect(error(single)?.position == (try offset(of: "'", in: single)))
    }

    @Test func keyPathsOutsideTheModelAreRefused() throws {
        let contentType = "SUBQUERY(extensionItems, $e, SUBQUERY($e.attachments, $a, "
            + "ANY $a.contentTypeUTI UTI-CONFORMS-TO \"public.url\").@count >= 1).@count >= 1"
        let keyError = error(contentType)
        #expect(keyError?.message.hasPrefix("unsupported key path $a.contentTypeUTI at position") == true)
        #expect(keyError?.position == (try offset(of: "$a.contentTypeUTI", in: contentType)))

        let unbound = "SUBQUERY(extensionItems, $e, $item.attachments.@count >= 1).@count >= 1"
        let unboundError = error(unbound)
        #expect(unboundError?.position == (try offset(of: "$item", in: unbound)))
        #expect(unboundError?.expected == "a variable bound by an enclosing SUBQUERY")

        #expect(error("ALL extensionItems.attachments.@count > 0")?.message.hasPrefix(
            "unsupported aggregate ALL") == true)
        #expect(error("extensionItems.@sum > 0")?.message.hasPrefix("unsupported collection operator @sum") == true)
        #expect(error("SUBQUERY(extensionItems, $e, TRUEPREDICATE) > 0")?.expected == "\".@count\" after SUBQUERY(…)")
        #expect(error("SUBQUERY(extensionItems, $e, TRUEPREDICATE).@count > 1.5")?.message.hasPrefix(
            "unsupported decimal number") == true)
    }
}
