import MobileCoreServices
import Testing
import UniformTypeIdentifiers

/// Apple's module names resolve on Linux to the kit, with Foundation re-exported as Apple's modules re-export it.
@Suite
struct AppleModuleNamesTests {
    @Test func theModulesGiveTheKitAndFoundation() throws {
        let page = URL(string: "https://example.com")!
        let provider = NSItemProvider(item: page as NSURL, typeIdentifier: kUTTypeURL as String)
        #expect(provider.hasItemConformingToTypeIdentifier(UTType.url.identifier))
        #expect(kUTTypeImage as String == UTType.image.identifier)
        #expect(UTType(kUTTypeHTML)?.conforms(to: UTType(kUTTypeText)!) == true)
        let data: Data = Data("x".utf8)
        #expect(data.count == 1)
    }
}
