extension TypeRegistry {
    /// MIME types libmagic reports under names that differ from the ones Apple declares.
    static let magicAliases: [String: String] = [
        "image/x-ms-bmp": "com.microsoft.bmp",
        "image/svg": "public.svg-image",
        "image/x-exr": "com.ilm.openexr-image",
        "image/x-tga": "com.truevision.tga-image",
        "image/x-canon-cr2": "com.canon.cr2-raw-image",
        "audio/x-flac": "org.xiph.flac",
        "audio/x-hx-aac-adts": "public.aac-audio",
        "application/ogg": "org.xiph.ogg-audio",
        "video/mp2t": "public.mpeg-2-transport-stream",
        "text/x-shellscript": "public.shell-script",
        "text/x-python": "public.python-script",
        "text/x-script.python": "public.python-script",
        "text/x-perl": "public.perl-script",
        "text/x-ruby": "public.ruby-script",
        "text/x-php": "public.php-script",
        "text/x-diff": "public.patch-file",
        "application/csv": "public.comma-separated-values-text",
        "application/x-rar": "com.rarlab.rar-archive",
        "application/x-cpio": "public.cpio-archive",
        "application/x-bplist": "com.apple.binary-property-list",
        "application/x-executable": "public.elf-binary",
        "application/x-pie-executable": "public.elf-binary",
        "application/x-sharedlib": "public.elf-binary",
        "application/x-mach-binary": "com.apple.mach-o-binary",
        "application/x-dosexec": "com.microsoft.windows-executable",
        "application/x-java-applet": "com.sun.java-class",
        "font/sfnt": "public.truetype-ttf-font",
        "application/x-font-ttf": "public.truetype-ttf-font",
        "application/vnd.ms-opentype": "public.opentype-font",
    ]

    /// MIME types libmagic reports when it has nothing to go on: empty input or bytes it does not recognise.
    static let magicNothingKnown: Set<String> = ["application/octet-stream", "inode/x-empty", "application/x-empty"]

    /// The types whose content starts with a signature, so that an empty or unrecognised file cannot be one.
    static let signatureFamilies = [
        "public.image", "public.audio", "public.movie", "public.audiovisual-content", "com.adobe.pdf", "public.archive",
    ]

    /// The type identifier for a MIME type sniffed by libmagic.
    ///
    /// `text/plain`, and any `text/` subtype the registry does not know (libmagic's guesses such as `text/x-c`),
    /// give `public.text`, because libmagic cannot tell plain text from CSV or JSON; nothing recognised gives
    /// `public.data`; libmagic's own names for known formats give the declared type; anything else gives a dynamic
    /// MIME type.
    public func sniffedType(forMIMEType mime: String) -> String {
        let key = Self.normalizedMIMEType(mime)
        if key == "text/plain" { return "public.text" }
        if Self.magicNothingKnown.contains(key) { return "public.data" }
        if let alias = Self.magicAliases[key] { return alias }
        if let known = knownType(forMIMEType: key) { return known }
        if key.hasPrefix("text/") { return "public.text" }
        return Self.dynamicIdentifier(.mimeType, key)
    }

    /// Whether sniffed content may be passed on as the declared type (SPEC "Types", rules a-d).
    ///
    /// Compatible when (a) the sniffed type conforms to the declared one; (b) the declared type conforms to a sniffed
    /// textual type; (c) libmagic could not tell: the content is empty and the declared type has no signature, or
    /// libmagic says `application/octet-stream` and the declared type has no signature and is not text; or (d) the
    /// declared type claims nothing a sniff could contradict: it is dynamic, `public.data` or `public.item`.
    public func isCompatible(sniffedMIMEType: String, declaredType: String, isEmpty: Bool) -> Bool {
        if isDynamic(declaredType) || declaredType.caseInsensitiveEquals("public.data")
            || declaredType.caseInsensitiveEquals("public.item")
        {
            return true
        }
        let sniffed = sniffedType(forMIMEType: sniffedMIMEType)
        if conforms(sniffed, to: declaredType) { return true }
        if conforms(sniffed, to: "public.text") && conforms(declaredType, to: sniffed) { return true }
        let hasSignature = Self.signatureFamilies.contains { conforms(declaredType, to: $0) }
        let key = Self.normalizedMIMEType(sniffedMIMEType)
        if isEmpty || key == "inode/x-empty" || key == "application/x-empty" { return !hasSignature }
        if key == "application/octet-stream" {
            return !hasSignature && !conforms(declaredType, to: "public.text")
        }
        return false
    }
}
