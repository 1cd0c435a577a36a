/// Content sniffing as the loader uses it: how many leading bytes libmagic sees, and what the answer means.
enum Sniffer {
    /// libmagic looks at this many leading bytes; enough for every signature and for text encodings.
    static let sniffLength = 64 << 10

    static func type(forSniffedMIMEType mimeType: String, registry: TypeRegistry) -> String {
        registry.type(forMIMEType: mimeType)
    }

    static func isCompatible(_ mimeType: String, declaredType: String, isEmpty: Bool, registry: TypeRegistry) -> Bool {
        let sniffed = type(forSniffedMIMEType: mimeType, registry: registry)
        return registry.conforms(sniffed, to: declaredType) || registry.isDynamic(declaredType)
            || declaredType == "public.data" || declaredType == "public.item" || isEmpty
            || (registry.conforms(sniffed, to: "public.text") && registry.conforms(declaredType, to: "public.text"))
    }
}
