// `import MobileCoreServices` on Linux: the extension kit's `kUTType…` constants (and, through the kit, `UTType`,
// `NSItemProvider` and Foundation) under Apple's module name. Depend on this product only on Linux
// (`condition: .when(platforms: [.linux])`): on Apple's platforms the system module of the same name is the real one.
#if os(Linux)
@_exported import SharepipeExtensionKit
#endif
