// `import UniformTypeIdentifiers` on Linux: the extension kit (and, through it, Foundation) under Apple's module name.
// Depend on this product only on Linux (`condition: .when(platforms: [.linux])`): on Apple's platforms the system
// module of the same name is the real one.
#if os(Linux)
@_exported import SharepipeExtensionKit
#endif
