import SharepipeSystem

extension TypeRegistry {
    /// MIME types libmagic reports under names other than the ones the formats' declarations carry.
    static let magicAliases: [String: String] = [
        "image/x-ms-bmp": "com.microsoft.bmp",
        "image/svg": "public.svg-image",
        "image/x-exr": "com.ilm.openexr-image",
        "image/x-tga": "com.truevision.tga-image",
        "image/x-canon-cr2": "com.canon.cr2-raw-image",
        "image/x-icns": "com.apple.icns",
        "image/x-eps": "com.adobe.encapsulated-postscript",
        "image/jpx": "public.jpeg-2000",
        "image/x-jp2-codestream": "public.jpeg-2000",
        "audio/x-flac": "org.xiph.flac",
        "audio/x-hx-aac-adts": "public.aac-audio",
        "audio/x-hx-aac-adif": "public.aac-audio",
        "audio/x-mp4a-latm": "public.mpeg-4-audio",
        "audio/mid": "public.midi-audio",
        "application/ogg": "org.xiph.ogg-audio",
        "video/mp2t": "public.mpeg-2-transport-stream",
        "text/x-shellscript": "public.shell-script",
        "text/x-python": "public.python-script",
        "text/x-script.python": "public.python-script",
        "text/x-perl": "public.perl-script",
        "text/x-ruby": "public.ruby-script",
        "text/x-php": "public.php-script",
        "text/x-diff": "public.patch-file",
        "text/x-c": "public.c-source",
        "text/x-c++": "public.c-plus-plus-source",
        "text/x-objective-c": "public.objective-c-source",
        "text/x-asm": "public.assembly-source",
        "text/x-java": "com.sun.java-source",
        "text/x-makefile": "public.make-source",
        "text/x-po": "org.gnu.gettext.po",
        "application/javascript": "com.netscape.javascript-source",
        "application/csv": "public.comma-separated-values-text",
        "application/x-rar": "com.rarlab.rar-archive",
        "application/x-zip": "public.zip-archive",
        "application/x-bzip": "public.bzip2-archive",
        "application/x-ustar": "public.tar-archive",
        "application/x-cpio": "public.cpio-archive",
        "application/x-bplist": "com.apple.binary-property-list",
        "application/x-executable": "public.elf-binary",
        "application/x-pie-executable": "public.elf-binary",
        "application/x-sharedlib": "public.elf-binary",
        "application/x-mach-binary": "com.apple.mach-o-binary",
        "application/x-dosexec": "com.microsoft.windows-executable",
        "application/x-java-applet": "com.sun.java-class",
        // sfnt is the container of TrueType and OpenType alike: libmagic cannot tell which one a file is.
        "font/sfnt": "public.font",
        "application/x-font-ttf": "public.truetype-ttf-font",
        "application/vnd.ms-opentype": "public.opentype-font",
    ]

    /// MIME types libmagic reports when it has nothing to go on: empty input or bytes it does not recognise.
    static let magicNothingKnown: Set<String> = ["application/octet-stream", "inode/x-empty", "application/x-empty"]

    /// The types whose content starts with a signature, so that an empty or unrecognised file cannot be one.
    static let signatureFamilies = [
        "public.image", "public.audio", "public.movie", "public.audiovisual-content", "com.adobe.pdf", "public.archive",
    ]

    /// Formats that are text though not declared under `public.text`: a text sniff is what libmagic sees of them.
    static let textualFormats = [
        "public.x509-certificate", "com.adobe.postscript", "public.xbitmap-image", "org.x.xpixmap-image",
        "public.url", "com.adobe.postscript-pfa-font",
    ]

    /// Textual formats with a binary encoding as well (a DER certificate, a URL as the binary property list that
    /// Apple's providers deliver): unrecognised bytes may be one.
    static let binaryEncodedFormats = ["public.x509-certificate", "public.url"]

    /// Formats libmagic sees as the compression around them (it never looks inside): an `.svgz` is gzip.
    static let compressedForms: [String: String] = ["public.svg-image": "org.gnu.gnu-zip-archive"]

    /// The type identifier for a MIME type sniffed by libmagic.
    ///
    /// libmagic's names for known formats, its own aliases included, give that format; `text/plain` gives
    /// `public.plain-text` and any other `text/` subtype the registry does not know gives `public.text`; nothing
    /// recognised gives `public.data`; anything else gives a dynamic MIME type.
    public func sniffedType(forMIMEType mime: String) -> String {
        let key = Self.normalizedMIMEType(mime)
        if Self.magicNothingKnown.contains(key) { return "public.data" }
        if let alias = Self.magicAliases[key] { return alias }
        if let known = knownType(forMIMEType: key) { return known }
        if key.hasPrefix("text/") { return "public.text" }
        return Self.dynamicIdentifier(.mimeType, key)
    }

    /// The type identifier for sniffed content: as `sniffedType(forMIMEType:)`, except that bytes libmagic could
    /// not name but that are valid UTF-8 without NUL (a one-byte note) are `public.plain-text`.
    package func sniffedType(forMIMEType mime: String, head: [UInt8]) -> String {
        let type = sniffedType(forMIMEType: mime)
        return type == "public.data" && Self.looksLikeText(head) ? "public.plain-text" : type
    }

    /// Whether sniffed content may be passed on as the declared type (SPEC "Types", rules a-f): a sniff may only
    /// contradict a declared type, never confirm it.
    ///
    /// Compatible when (a) the sniffed type conforms to the declared one; (b) the declared type conforms to the
    /// sniffed one, libmagic having seen the container or the general form; (c) both are textual; (d) libmagic
    /// could not tell: the content is empty and the declared type has no signature, or libmagic says
    /// `application/octet-stream` of bytes that are not text and the declared type has no signature and is not
    /// textual (octet-stream of UTF-8 without NUL is text, and (c) applies); (e) the declared type claims
    /// nothing: it is dynamic, `public.data` or `public.item`; or (f) the declared type is textual and the bytes
    /// are text (valid UTF-8 without NUL): a signature libmagic reads into a text's first letters (base64 it takes
    /// for HP-GL, a note that starts "GIF89a") does not make it binary. `head` is the content's first bytes, as
    /// sniffed.
    public func isCompatible(sniffedMIMEType: String, declaredType: String, head: [UInt8]) -> Bool {
        if isDynamic(declaredType) || declaredType.caseInsensitiveEquals("public.data")
            || declaredType.caseInsensitiveEquals("public.item")
        {
            return true
        }
        let key = Self.normalizedMIMEType(sniffedMIMEType)
        let hasSignature = Self.signatureFamilies.contains { conforms(declaredType, to: $0) }
        if head.isEmpty || key == "inode/x-empty" || key == "application/x-empty" { return !hasSignature }
        if isTextual(declaredType) && Self.looksLikeText(head) { return true }
        let sniffed = sniffedType(forMIMEType: key, head: head)
        if sniffed == "public.data" {
            let binaryEncoded = Self.binaryEncodedFormats.contains { conforms(declaredType, to: $0) }
            return !hasSignature && (binaryEncoded || !isTextual(declaredType))
        }
        if conforms(sniffed, to: declaredType) || conforms(declaredType, to: sniffed) { return true }
        if isTextual(sniffed) && isTextual(declaredType) { return true }
        return Self.compressedForms.contains { form, compression in
            conforms(declaredType, to: form) && conforms(sniffed, to: compression)
        }
    }

    /// How much libmagic must be asked about content declared as `declaredType`. Once rule (f) holds, no answer of
    /// libmagic's can refuse text declared as textual, so for such content (valid UTF-8 without NUL) only its
    /// built-in tests run: they still name the encoding, JSON and CSV truthfully, for a fraction of the cost of the
    /// database's regular expressions. Everything else, and content of unknown declared type, gets every test.
    func sniffScope(declaredType: String?, head: [UInt8]) -> Magic.Scope {
        guard let declaredType, !isDynamic(declaredType), isTextual(declaredType), Self.looksLikeText(head) else {
            return .full
        }
        return .builtin
    }

    /// Whether a type is text: under `public.text`, or one of the textual formats declared elsewhere.
    func isTextual(_ type: String) -> Bool {
        conforms(type, to: "public.text") || Self.textualFormats.contains { conforms(type, to: $0) }
    }

    /// Whether bytes libmagic could not name are text: valid UTF-8 without NUL, a sequence cut by the end of a full
    /// sniff buffer allowed.
    static func looksLikeText(_ head: [UInt8]) -> Bool {
        guard !head.isEmpty, !head.contains(0) else { return false }
        var bytes = head[...]
        if head.count >= Sniffer.sniffLength, let lead = bytes.lastIndex(where: { $0 & 0xC0 != 0x80 }),
            head[lead] >= 0xC0, head.count - lead < Self.sequenceLength(head[lead])
        {
            bytes = head[..<lead]
        }
        // The standard library's validation (an ASCII fast path), not a decoder stepping scalar by scalar: this
        // runs on the first bytes of every copy (1.4% of the daemon's samples for 4 KiB uploads).
        return String(validating: bytes, as: UTF8.self) != nil
    }

    private static func sequenceLength(_ lead: UInt8) -> Int {
        lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2
    }
}
