import Foundation
import SharepipeCore
@testable import SharepipeExtensionKit
import Testing

@Suite struct UTTypeTests {
    @Test func conformanceIsReflexiveAndTransitive() throws {
        #expect(UTType.jpeg.conforms(to: .jpeg))
        #expect(UTType.jpeg.conforms(to: .image))
        #expect(UTType.jpeg.conforms(to: .data))
        #expect(UTType.jpeg.conforms(to: .item))
        #expect(!UTType.jpeg.conforms(to: .png))
        #expect(!UTType.image.conforms(to: .jpeg))
        #expect(UTType.image.isSupertype(of: .heic))
        #expect(UTType.heic.isSubtype(of: .image))
        #expect(UTType.fileURL.conforms(to: .url))
        #expect(UTType.utf8PlainText.conforms(to: .text))
        #expect(UTType.jpeg.supertypes == [.image, .data, .content, .item])
        #expect(!UTType.jpeg.supertypes.contains(.jpeg))
    }

    @Test func identifiersAreLookedUpCaseInsensitively() throws {
        #expect(UTType("PUBLIC.JPEG") == .jpeg)
        #expect(UTType("public.jpeg")?.identifier == "public.jpeg")
        #expect(UTType("com.example.never-declared") == nil)
        #expect(UTType("") == nil)
        let dynamic = try #require(UTType(filenameExtension: "xyz"))
        #expect(UTType(dynamic.identifier) == dynamic)
    }

    @Test func filenameExtensionsAndMIMETypesFindTheirTypes() throws {
        #expect(UTType(filenameExtension: "jpg") == .jpeg)
        #expect(UTType(filenameExtension: "JPEG") == .jpeg)
        #expect(UTType(filenameExtension: "pdf") == .pdf)
        #expect(UTType(filenameExtension: "heic", conformingTo: .image) == .heic)
        #expect(UTType(filenameExtension: "jpg", conformingTo: .text) == nil)
        #expect(UTType(filenameExtension: "") == nil)
        #expect(UTType(mimeType: "image/png") == .png)
        #expect(UTType(mimeType: "text/plain; charset=utf-8") == .plainText)
        #expect(UTType(mimeType: "application/pdf", conformingTo: .image) == nil)
        #expect(UTType.types(tag: "jpg", tagClass: .filenameExtension, conformingTo: nil).first == .jpeg)
    }

    @Test func unknownTagsGiveDynamicTypesThatRoundTrip() throws {
        let byExtension = try #require(UTType(filenameExtension: "xyz"))
        #expect(byExtension.isDynamic)
        #expect(!byExtension.isDeclared)
        #expect(!byExtension.isPublic)
        #expect(byExtension.identifier.hasPrefix("dyn."))
        #expect(byExtension.preferredFilenameExtension == "xyz")
        #expect(byExtension.tags == [.filenameExtension: ["xyz"]])
        #expect(byExtension.conforms(to: .data) && byExtension.conforms(to: .item))
        #expect(!byExtension.conforms(to: .image))
        #expect(byExtension.supertypes == [.data, .item])
        #expect(UTType(filenameExtension: "xyz", conformingTo: .image) == nil)

        let byMIME = try #require(UTType(mimeType: "application/x-sharepipe-test"))
        #expect(byMIME.isDynamic)
        #expect(byMIME.preferredMIMEType == "application/x-sharepipe-test")
        #expect(byMIME.preferredFilenameExtension == nil)
    }

    @Test func preferredTagsAndTagsComeFromTheDeclaration() throws {
        #expect(UTType.png.preferredFilenameExtension == "png")
        #expect(UTType.png.preferredMIMEType == "image/png")
        #expect(UTType.pdf.preferredMIMEType == "application/pdf")
        #expect(UTType.item.preferredFilenameExtension == nil)
        #expect(UTType.jpeg.tags[.filenameExtension]?.contains("jpg") == true)
        #expect(UTType.jpeg.tags[.mimeType]?.contains("image/jpeg") == true)
        #expect(UTType.jpeg.isDeclared && UTType.jpeg.isPublic && !UTType.jpeg.isDynamic)
        #expect(UTType.pdf.localizedDescription?.isEmpty == false)
        #expect("\(UTType.heic)" == "public.heic")
    }

    @Test func everyStaticSystemTypeIsDeclaredUnderItsIdentifier() throws {
        #expect(UTType.systemTypes.count >= 120)
        for type in UTType.systemTypes {
            let declaration = try #require(TypeRegistry.standard.declaration(for: type.identifier), "\(type)")
            #expect(declaration.identifier == type.identifier)
            #expect(UTType(type.identifier) == type)
        }
        #expect(Set(UTType.systemTypes).count == UTType.systemTypes.count)
    }

    @Test func typesEncodeAsTheirIdentifier() throws {
        let encoded = try JSONEncoder().encode([UTType.jpeg, .pdf])
        #expect(String(decoding: encoded, as: UTF8.self) == #"["public.jpeg","com.adobe.pdf"]"#)
        #expect(try JSONDecoder().decode([UTType].self, from: encoded) == [.jpeg, .pdf])
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode([UTType].self, from: Data(#"["com.example.nothing"]"#.utf8))
        }
    }
}
