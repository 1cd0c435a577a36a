import Testing
@testable import SharepipeCore
@testable import SharepipeDaemon
@testable import SharepipeIngest
@testable import SharepipeLedger
@testable import SharepipeSpool
@testable import SharepipeSystem

@Suite struct TypeRegistryTests {
    let registry = TypeRegistry.standard

    @Test func conformanceIsReflexiveTransitiveAndCaseInsensitive() {
        #expect(registry.conforms("public.jpeg", to: "public.jpeg"))
        #expect(registry.conforms("public.jpeg", to: "public.item"))
        #expect(registry.conforms("PUBLIC.HEIC", to: "public.image"))
        #expect(!registry.conforms("public.heic", to: "public.heif"))
        #expect(registry.conforms("public.text", to: "public.content"))
        #expect(!registry.conforms("public.folder", to: "public.data"))
    }

    @Test func dynamicTypesRoundTripAndConformOnlyToDataAndItem() throws {
        let type = registry.type(forFilenameExtension: "Xyz.Q")
        #expect(type.hasPrefix("dyn."))
        let (tagClass, tag) = try #require(TypeRegistry.tag(ofDynamic: type))
        #expect(tagClass == .filenameExtension)
        #expect(tag == "xyz.q")
        #expect(registry.conforms(type, to: "public.data"))
        #expect(registry.conforms(type, to: "public.item"))
        #expect(!registry.conforms(type, to: "public.content"))
    }

    @Test func cyclesAndUnknownParentsAreLoadErrors() {
        #expect(throws: TypeDeclarationError.self) {
            try TypeRegistry(declarations: [
                TypeDeclaration("com.example.a", conformsTo: ["com.example.b"]),
                TypeDeclaration("com.example.b", conformsTo: ["com.example.a"]),
            ])
        }
        #expect(throws: TypeDeclarationError.self) {
            try TypeRegistry(declarations: [TypeDeclaration("com.example.a", conformsTo: ["com.example.nope"])])
        }
        #expect(throws: TypeDeclarationError.self) {
            try TypeRegistry(declarations: [TypeDeclaration("public.mine", conformsTo: ["public.data"])])
        }
    }
}
