extension TypeDeclaration {
    /// Apple's public system types, with their direct parents and tags as Apple declares them (UTCoreTypes and the
    /// system's type declarations); `public.` types come first wherever a tag is shared.
    ///
    /// Documented roots, declared by Apple without parents: `public.item`, `public.content`, `public.archive`,
    /// `public.executable`, `public.message`, `public.contact`, `public.calendar-event`, `public.to-do-item`,
    /// `public.database`, `public.bookmark`, `public.playlist` and `com.apple.resolvable`. Every other type
    /// conforms to `public.item` or to one of these roots.
    static let builtin: [TypeDeclaration] = [
        baseTypes, executableTypes, textTypes, sourceCodeTypes, contactAndMessageTypes, imageTypes, documentTypes,
        audiovisualTypes, archiveTypes, fontTypes, threeDimensionalTypes, miscellaneousTypes,
    ].flatMap { $0 }

    /// Roots, physical bases, directories, bundles, resolvable items and URLs.
    private static let baseTypes: [TypeDeclaration] = [
        TypeDeclaration("public.item", conformsTo: [], description: "item"),
        TypeDeclaration("public.content", conformsTo: [], description: "content"),
        TypeDeclaration(
            "public.composite-content", conformsTo: ["public.content"], description: "composite content"),
        TypeDeclaration(
            "public.data", conformsTo: ["public.item"], description: "data",
            mimeTypes: ["application/octet-stream"]),
        TypeDeclaration("public.directory", conformsTo: ["public.item"], description: "directory"),
        TypeDeclaration("public.folder", conformsTo: ["public.directory"], description: "folder"),
        TypeDeclaration("public.volume", conformsTo: ["public.folder"], description: "volume"),
        TypeDeclaration("com.apple.package", conformsTo: ["public.directory"], description: "package"),
        TypeDeclaration("com.apple.bundle", conformsTo: ["public.directory"], description: "bundle"),
        TypeDeclaration(
            "com.apple.plugin", conformsTo: ["com.apple.bundle", "com.apple.package"], description: "plug-in",
            filenameExtensions: ["plugin"]),
        TypeDeclaration(
            "com.apple.framework", conformsTo: ["com.apple.bundle"], description: "framework",
            filenameExtensions: ["framework"]),
        TypeDeclaration(
            "com.apple.xpc-service", conformsTo: ["com.apple.bundle", "com.apple.package"],
            description: "XPC service", filenameExtensions: ["xpc"]),
        TypeDeclaration("com.apple.resolvable", conformsTo: [], description: "resolvable item"),
        TypeDeclaration(
            "public.symlink", conformsTo: ["public.item", "com.apple.resolvable"], description: "symbolic link"),
        TypeDeclaration(
            "com.apple.alias-file", conformsTo: ["public.data", "com.apple.resolvable"], description: "alias"),
        TypeDeclaration(
            "com.apple.bookmark", conformsTo: ["public.data", "com.apple.resolvable"], description: "URL bookmark"),
        TypeDeclaration(
            "com.apple.mount-point", conformsTo: ["public.item", "com.apple.resolvable"], description: "mount point"),
        TypeDeclaration("public.url", conformsTo: ["public.data"], description: "URL"),
        TypeDeclaration("public.file-url", conformsTo: ["public.url"], description: "file URL"),
        TypeDeclaration("public.url-name", conformsTo: ["public.data"], description: "URL name"),
        TypeDeclaration("com.apple.active-webpage", conformsTo: ["public.item"], description: "active web page"),
    ]

    /// Applications and executables.
    private static let executableTypes: [TypeDeclaration] = [
        TypeDeclaration("public.executable", conformsTo: [], description: "executable"),
        TypeDeclaration("com.apple.application", conformsTo: ["public.executable"], description: "application"),
        TypeDeclaration(
            "com.apple.application-bundle",
            conformsTo: ["com.apple.application", "com.apple.bundle", "com.apple.package"],
            description: "application bundle", filenameExtensions: ["app"]),
        TypeDeclaration(
            "com.apple.application-file", conformsTo: ["com.apple.application", "public.data"],
            description: "application file"),
        TypeDeclaration(
            "com.apple.application-and-system-extension", conformsTo: ["com.apple.xpc-service"],
            description: "application extension", filenameExtensions: ["appex"]),
        TypeDeclaration(
            "public.unix-executable", conformsTo: ["public.data", "public.executable"],
            description: "Unix executable"),
        TypeDeclaration(
            "public.elf-binary", conformsTo: ["public.data", "public.executable"], description: "ELF binary"),
        TypeDeclaration(
            "com.apple.mach-o-binary", conformsTo: ["public.unix-executable"], description: "Mach-O binary"),
        TypeDeclaration(
            "public.object-code", conformsTo: ["public.data", "public.executable"], description: "object code",
            filenameExtensions: ["o"]),
        TypeDeclaration(
            "com.microsoft.windows-executable", conformsTo: ["public.data", "public.executable"],
            description: "Windows executable", filenameExtensions: ["exe"],
            mimeTypes: ["application/x-msdownload"]),
        TypeDeclaration(
            "com.microsoft.windows-dynamic-link-library", conformsTo: ["public.data", "public.executable"],
            description: "Windows dynamic link library", filenameExtensions: ["dll"],
            mimeTypes: ["application/x-msdownload"]),
        TypeDeclaration(
            "com.sun.java-class", conformsTo: ["public.data", "public.executable"], description: "Java class",
            filenameExtensions: ["class"]),
        TypeDeclaration(
            "com.sun.java-archive", conformsTo: ["public.zip-archive", "public.executable"],
            description: "Java archive", filenameExtensions: ["jar"], mimeTypes: ["application/java-archive"]),
    ]

    /// Text, markup, serialized data and property lists.
    private static let textTypes: [TypeDeclaration] = [
        TypeDeclaration(
            "public.text", conformsTo: ["public.data", "public.content"], description: "text",
            mimeTypes: ["text/*"]),
        TypeDeclaration(
            "public.plain-text", conformsTo: ["public.text"], description: "plain text",
            filenameExtensions: ["txt", "text"], mimeTypes: ["text/plain"]),
        TypeDeclaration(
            "public.utf8-plain-text", conformsTo: ["public.plain-text"], description: "UTF-8 plain text"),
        TypeDeclaration(
            "public.utf16-external-plain-text", conformsTo: ["public.plain-text"],
            description: "UTF-16 plain text, external byte order"),
        TypeDeclaration(
            "public.utf16-plain-text", conformsTo: ["public.plain-text"], description: "UTF-16 plain text"),
        TypeDeclaration(
            "public.delimited-values-text", conformsTo: ["public.text"], description: "delimited values text"),
        TypeDeclaration(
            "public.comma-separated-values-text", conformsTo: ["public.plain-text", "public.delimited-values-text"],
            description: "comma-separated values", filenameExtensions: ["csv"],
            mimeTypes: ["text/csv", "text/comma-separated-values"]),
        TypeDeclaration(
            "public.tab-separated-values-text", conformsTo: ["public.plain-text", "public.delimited-values-text"],
            description: "tab-separated values", filenameExtensions: ["tsv"],
            mimeTypes: ["text/tab-separated-values"]),
        TypeDeclaration(
            "public.utf8-tab-separated-values-text",
            conformsTo: ["public.tab-separated-values-text", "public.utf8-plain-text"],
            description: "UTF-8 tab-separated values"),
        TypeDeclaration(
            "public.rtf", conformsTo: ["public.text"], description: "rich text (RTF)",
            filenameExtensions: ["rtf"], mimeTypes: ["text/rtf"]),
        TypeDeclaration(
            "public.html", conformsTo: ["public.text"], description: "HTML",
            filenameExtensions: ["html", "htm", "shtml", "shtm"], mimeTypes: ["text/html"]),
        TypeDeclaration(
            "public.xml", conformsTo: ["public.text"], description: "XML",
            filenameExtensions: ["xml"], mimeTypes: ["application/xml", "text/xml"]),
        TypeDeclaration(
            "public.xhtml", conformsTo: ["public.xml"], description: "XHTML",
            filenameExtensions: ["xhtml", "xhtm", "xht"], mimeTypes: ["application/xhtml+xml"]),
        TypeDeclaration(
            "public.rss", conformsTo: ["public.xml"], description: "RSS feed",
            filenameExtensions: ["rss"], mimeTypes: ["application/rss+xml"]),
        TypeDeclaration(
            "public.css", conformsTo: ["public.text"], description: "CSS",
            filenameExtensions: ["css"], mimeTypes: ["text/css"]),
        TypeDeclaration(
            "public.json", conformsTo: ["public.text"], description: "JSON",
            filenameExtensions: ["json"], mimeTypes: ["application/json"]),
        TypeDeclaration(
            "public.ndjson", conformsTo: ["public.text"], description: "newline-delimited JSON",
            filenameExtensions: ["ndjson"], mimeTypes: ["application/x-ndjson"]),
        TypeDeclaration(
            "public.yaml", conformsTo: ["public.text"], description: "YAML",
            filenameExtensions: ["yml", "yaml"], mimeTypes: ["application/x-yaml", "application/yaml", "text/yaml"]),
        TypeDeclaration(
            "net.daringfireball.markdown", conformsTo: ["public.utf8-plain-text"], description: "Markdown",
            filenameExtensions: ["md", "markdown", "mdown", "mkd", "mkdn"],
            mimeTypes: ["text/markdown", "text/x-markdown"]),
        TypeDeclaration(
            "org.docutils.restructuredtext", conformsTo: ["public.plain-text"], description: "reStructuredText",
            filenameExtensions: ["rst", "rest"], mimeTypes: ["text/x-rst", "text/prs.fallenstein.rst"]),
        TypeDeclaration(
            "io.toml", conformsTo: ["public.plain-text"], description: "TOML",
            filenameExtensions: ["toml"], mimeTypes: ["application/toml"]),
        TypeDeclaration(
            "org.freedesktop.config-text", conformsTo: ["public.plain-text"], description: "configuration text",
            filenameExtensions: ["conf", "cfg", "cnf", "config"]),
        TypeDeclaration(
            "com.microsoft.ini", conformsTo: ["public.plain-text"], description: "INI settings",
            filenameExtensions: ["ini"]),
        TypeDeclaration(
            "org.gnu.gettext.po", conformsTo: ["public.plain-text"], description: "gettext catalogue source",
            filenameExtensions: ["po", "pot"], mimeTypes: ["text/x-po", "text/x-gettext-translation"]),
        TypeDeclaration(
            "org.gnu.gettext.mo", conformsTo: ["public.data"], description: "gettext compiled catalogue",
            filenameExtensions: ["mo", "gmo"], mimeTypes: ["application/x-gettext-translation"]),
        TypeDeclaration(
            "public.patch-file", conformsTo: ["public.plain-text"], description: "patch file",
            filenameExtensions: ["patch", "diff"]),
        TypeDeclaration(
            "org.w3.webvtt", conformsTo: ["public.text"], description: "WebVTT captions",
            filenameExtensions: ["vtt"], mimeTypes: ["text/vtt"]),
        TypeDeclaration("public.log", conformsTo: ["public.item"], description: "log"),
        TypeDeclaration(
            "com.apple.log", conformsTo: ["public.plain-text", "public.log"], description: "log file",
            filenameExtensions: ["log"]),
        TypeDeclaration(
            "com.apple.property-list", conformsTo: ["public.data"], description: "property list",
            filenameExtensions: ["plist"]),
        TypeDeclaration(
            "com.apple.xml-property-list", conformsTo: ["public.xml", "com.apple.property-list"],
            description: "XML property list", filenameExtensions: ["plist"]),
        TypeDeclaration(
            "com.apple.binary-property-list", conformsTo: ["com.apple.property-list"],
            description: "binary property list", filenameExtensions: ["plist"]),
    ]

    /// Source code and scripts.
    private static let sourceCodeTypes: [TypeDeclaration] = [
        TypeDeclaration("public.source-code", conformsTo: ["public.plain-text"], description: "source code"),
        TypeDeclaration(
            "public.assembly-source", conformsTo: ["public.source-code"], description: "assembly source",
            filenameExtensions: ["s"]),
        TypeDeclaration(
            "public.c-source", conformsTo: ["public.source-code"], description: "C source",
            filenameExtensions: ["c"]),
        TypeDeclaration(
            "public.objective-c-source", conformsTo: ["public.source-code"], description: "Objective-C source",
            filenameExtensions: ["m"]),
        TypeDeclaration(
            "public.swift-source", conformsTo: ["public.source-code"], description: "Swift source",
            filenameExtensions: ["swift"]),
        TypeDeclaration(
            "public.c-plus-plus-source", conformsTo: ["public.source-code"], description: "C++ source",
            filenameExtensions: ["cp", "cpp", "c++", "cc", "cxx"]),
        TypeDeclaration(
            "public.objective-c-plus-plus-source", conformsTo: ["public.source-code"],
            description: "Objective-C++ source", filenameExtensions: ["mm"]),
        TypeDeclaration(
            "public.c-header", conformsTo: ["public.source-code"], description: "C header",
            filenameExtensions: ["h"]),
        TypeDeclaration(
            "public.c-plus-plus-header", conformsTo: ["public.source-code"], description: "C++ header",
            filenameExtensions: ["hh", "hp", "hpp", "hxx", "h++", "ipp"]),
        TypeDeclaration(
            "com.sun.java-source", conformsTo: ["public.source-code"], description: "Java source",
            filenameExtensions: ["java", "jav"]),
        TypeDeclaration("public.script", conformsTo: ["public.source-code"], description: "script"),
        TypeDeclaration(
            "com.apple.applescript.text", conformsTo: ["public.script"], description: "AppleScript text",
            filenameExtensions: ["applescript"]),
        TypeDeclaration(
            "com.apple.applescript.script", conformsTo: ["public.data", "public.script"],
            description: "compiled AppleScript", filenameExtensions: ["scpt"]),
        TypeDeclaration(
            "com.netscape.javascript-source", conformsTo: ["public.script", "public.executable"],
            description: "JavaScript", filenameExtensions: ["js", "jscript", "javascript", "mjs"],
            mimeTypes: ["text/javascript", "application/javascript", "application/x-javascript"]),
        TypeDeclaration(
            "public.shell-script", conformsTo: ["public.script"], description: "shell script",
            filenameExtensions: ["sh"], mimeTypes: ["application/x-sh", "text/x-sh"]),
        TypeDeclaration(
            "public.bash-script", conformsTo: ["public.shell-script"], description: "Bash script",
            filenameExtensions: ["bash"]),
        TypeDeclaration(
            "public.zsh-script", conformsTo: ["public.shell-script"], description: "Z shell script",
            filenameExtensions: ["zsh"]),
        TypeDeclaration(
            "public.csh-script", conformsTo: ["public.shell-script"], description: "C shell script",
            filenameExtensions: ["csh"]),
        TypeDeclaration(
            "public.ksh-script", conformsTo: ["public.shell-script"], description: "Korn shell script",
            filenameExtensions: ["ksh"]),
        TypeDeclaration(
            "public.perl-script", conformsTo: ["public.shell-script"], description: "Perl script",
            filenameExtensions: ["pl", "pm"], mimeTypes: ["text/x-perl-script"]),
        TypeDeclaration(
            "public.python-script", conformsTo: ["public.shell-script"], description: "Python script",
            filenameExtensions: ["py"], mimeTypes: ["text/x-python-script"]),
        TypeDeclaration(
            "public.ruby-script", conformsTo: ["public.shell-script"], description: "Ruby script",
            filenameExtensions: ["rb", "rbw"], mimeTypes: ["text/x-ruby-script"]),
        TypeDeclaration(
            "public.php-script", conformsTo: ["public.shell-script"], description: "PHP script",
            filenameExtensions: ["php", "php3", "php4", "ph3", "ph4", "phtml"],
            mimeTypes: ["text/php", "text/x-php-script", "application/php"]),
        TypeDeclaration(
            "public.make-source", conformsTo: ["public.script"], description: "makefile",
            filenameExtensions: ["make", "mak", "gmk", "mk"]),
        TypeDeclaration(
            "org.iso.sql", conformsTo: ["public.source-code"], description: "SQL source",
            filenameExtensions: ["sql"], mimeTypes: ["application/sql", "text/x-sql"]),
    ]

    /// Contacts, messages and calendar data.
    private static let contactAndMessageTypes: [TypeDeclaration] = [
        TypeDeclaration("public.contact", conformsTo: [], description: "contact"),
        TypeDeclaration(
            "public.vcard", conformsTo: ["public.text", "public.contact"], description: "vCard",
            filenameExtensions: ["vcf", "vcard"], mimeTypes: ["text/vcard", "text/directory", "text/x-vcard"]),
        TypeDeclaration("public.message", conformsTo: [], description: "message"),
        TypeDeclaration("public.email-message", conformsTo: ["public.message"], description: "email message"),
        TypeDeclaration(
            "com.apple.mail.email", conformsTo: ["public.data", "public.email-message"],
            description: "email message file", filenameExtensions: ["eml"], mimeTypes: ["message/rfc822"]),
        TypeDeclaration("public.calendar-event", conformsTo: [], description: "calendar event"),
        TypeDeclaration(
            "com.apple.ical.ics", conformsTo: ["public.text", "public.item", "public.calendar-event"],
            description: "iCalendar file", filenameExtensions: ["ics"], mimeTypes: ["text/calendar"]),
        TypeDeclaration(
            "com.apple.ical.vcs", conformsTo: ["public.text", "public.item", "public.calendar-event"],
            description: "vCalendar file", filenameExtensions: ["vcs", "vcal"], mimeTypes: ["text/x-vcalendar"]),
        TypeDeclaration("public.to-do-item", conformsTo: [], description: "to-do item"),
    ]

    /// Images, including the HEIF family and camera raw formats.
    private static let imageTypes: [TypeDeclaration] = [
        TypeDeclaration(
            "public.image", conformsTo: ["public.data", "public.content"], description: "image",
            mimeTypes: ["image/*"]),
        TypeDeclaration(
            "public.jpeg", conformsTo: ["public.image"], description: "JPEG image",
            filenameExtensions: ["jpeg", "jpg", "jpe"], mimeTypes: ["image/jpeg", "image/jpg"]),
        TypeDeclaration(
            "public.png", conformsTo: ["public.image"], description: "PNG image",
            filenameExtensions: ["png"], mimeTypes: ["image/png"]),
        TypeDeclaration(
            "com.compuserve.gif", conformsTo: ["public.image"], description: "GIF image",
            filenameExtensions: ["gif"], mimeTypes: ["image/gif"]),
        TypeDeclaration(
            "public.tiff", conformsTo: ["public.image"], description: "TIFF image",
            filenameExtensions: ["tiff", "tif"], mimeTypes: ["image/tiff"]),
        TypeDeclaration(
            "com.microsoft.bmp", conformsTo: ["public.image"], description: "Windows bitmap",
            filenameExtensions: ["bmp", "dib"], mimeTypes: ["image/bmp", "image/x-bmp"]),
        TypeDeclaration(
            "com.microsoft.ico", conformsTo: ["public.image"], description: "Windows icon",
            filenameExtensions: ["ico"], mimeTypes: ["image/vnd.microsoft.icon", "image/x-icon"]),
        TypeDeclaration(
            "com.apple.icns", conformsTo: ["public.image"], description: "Apple icon image",
            filenameExtensions: ["icns"]),
        TypeDeclaration(
            "public.svg-image", conformsTo: ["public.image", "public.xml"], description: "SVG image",
            filenameExtensions: ["svg", "svgz"], mimeTypes: ["image/svg+xml"]),
        TypeDeclaration(
            "org.webmproject.webp", conformsTo: ["public.image"], description: "WebP image",
            filenameExtensions: ["webp"], mimeTypes: ["image/webp"]),
        TypeDeclaration(
            "public.heif-standard", conformsTo: ["public.image"], description: "HEIF standard image"),
        TypeDeclaration(
            "public.heic", conformsTo: ["public.heif-standard"], description: "HEIC image",
            filenameExtensions: ["heic"], mimeTypes: ["image/heic"]),
        TypeDeclaration(
            "public.heif", conformsTo: ["public.heif-standard"], description: "HEIF image",
            filenameExtensions: ["heif"], mimeTypes: ["image/heif"]),
        TypeDeclaration(
            "public.heics", conformsTo: ["public.heif-standard"], description: "HEIC image sequence",
            filenameExtensions: ["heics"], mimeTypes: ["image/heic-sequence"]),
        TypeDeclaration(
            "public.avif", conformsTo: ["public.image"], description: "AVIF image",
            filenameExtensions: ["avif"], mimeTypes: ["image/avif"]),
        TypeDeclaration(
            "public.jpeg-2000", conformsTo: ["public.image"], description: "JPEG 2000 image",
            filenameExtensions: ["jp2", "jpf", "jpx", "j2k", "j2c"], mimeTypes: ["image/jp2"]),
        TypeDeclaration("public.camera-raw-image", conformsTo: ["public.image"], description: "camera raw image"),
        TypeDeclaration(
            "com.adobe.raw-image", conformsTo: ["public.camera-raw-image"], description: "Adobe DNG raw image",
            filenameExtensions: ["dng"]),
        TypeDeclaration(
            "com.canon.cr2-raw-image", conformsTo: ["public.camera-raw-image"], description: "Canon raw image",
            filenameExtensions: ["cr2"]),
        TypeDeclaration(
            "com.nikon.raw-image", conformsTo: ["public.camera-raw-image"], description: "Nikon raw image",
            filenameExtensions: ["nef"]),
        TypeDeclaration(
            "com.sony.arw-raw-image", conformsTo: ["public.camera-raw-image"], description: "Sony raw image",
            filenameExtensions: ["arw"]),
        TypeDeclaration(
            "com.ilm.openexr-image", conformsTo: ["public.image"], description: "OpenEXR image",
            filenameExtensions: ["exr"]),
        TypeDeclaration(
            "com.adobe.photoshop-image", conformsTo: ["public.image"], description: "Photoshop image",
            filenameExtensions: ["psd"], mimeTypes: ["image/vnd.adobe.photoshop"]),
        TypeDeclaration(
            "com.truevision.tga-image", conformsTo: ["public.image"], description: "Targa image",
            filenameExtensions: ["tga"]),
        TypeDeclaration(
            "com.sgi.sgi-image", conformsTo: ["public.image"], description: "SGI image",
            filenameExtensions: ["sgi"]),
        TypeDeclaration(
            "com.apple.pict", conformsTo: ["public.image"], description: "QuickDraw picture",
            filenameExtensions: ["pict", "pct", "pic"], mimeTypes: ["image/pict", "image/x-pict", "image/x-macpict"]),
        TypeDeclaration(
            "com.apple.quicktime-image", conformsTo: ["public.image"], description: "QuickTime image",
            filenameExtensions: ["qtif", "qti"], mimeTypes: ["image/x-quicktime"]),
        TypeDeclaration(
            "public.xbitmap-image", conformsTo: ["public.image"], description: "X bitmap image",
            filenameExtensions: ["xbm"], mimeTypes: ["image/x-xbitmap"]),
        TypeDeclaration(
            "org.x.xpixmap-image", conformsTo: ["public.image"], description: "X pixmap image",
            filenameExtensions: ["xpm"], mimeTypes: ["image/x-xpixmap", "image/x-xpm"]),
        TypeDeclaration("public.fax", conformsTo: ["public.image", "public.message"], description: "fax"),
    ]

    /// PDF, PostScript, office documents, e-books and web archives.
    private static let documentTypes: [TypeDeclaration] = [
        TypeDeclaration(
            "com.adobe.pdf", conformsTo: ["public.data", "public.composite-content"], description: "PDF document",
            filenameExtensions: ["pdf"], mimeTypes: ["application/pdf"]),
        TypeDeclaration(
            "com.adobe.postscript", conformsTo: ["public.data"], description: "PostScript document",
            filenameExtensions: ["ps"], mimeTypes: ["application/postscript"]),
        TypeDeclaration(
            "com.adobe.encapsulated-postscript", conformsTo: ["com.adobe.postscript"],
            description: "encapsulated PostScript", filenameExtensions: ["eps"]),
        TypeDeclaration(
            "com.adobe.illustrator.ai-image", conformsTo: ["com.adobe.pdf"], description: "Illustrator document",
            filenameExtensions: ["ai"]),
        TypeDeclaration(
            "com.apple.rtfd", conformsTo: ["com.apple.package", "public.composite-content"],
            description: "rich text with attachments (RTFD)", filenameExtensions: ["rtfd"]),
        TypeDeclaration(
            "com.apple.flat-rtfd", conformsTo: ["public.data", "public.composite-content"],
            description: "flattened RTFD"),
        TypeDeclaration(
            "com.apple.webarchive", conformsTo: ["public.data", "public.composite-content"],
            description: "web archive", filenameExtensions: ["webarchive"], mimeTypes: ["application/x-webarchive"]),
        TypeDeclaration(
            "org.idpf.epub-container", conformsTo: ["public.zip-archive", "public.composite-content"],
            description: "EPUB publication", filenameExtensions: ["epub"], mimeTypes: ["application/epub+zip"]),
        TypeDeclaration("public.presentation", conformsTo: ["public.composite-content"], description: "presentation"),
        TypeDeclaration("public.spreadsheet", conformsTo: ["public.content"], description: "spreadsheet"),
        TypeDeclaration(
            "com.microsoft.word.doc", conformsTo: ["public.data", "public.composite-content"],
            description: "Word 97 document", filenameExtensions: ["doc"], mimeTypes: ["application/msword"]),
        TypeDeclaration(
            "com.microsoft.excel.xls", conformsTo: ["public.data", "public.spreadsheet"],
            description: "Excel 97 workbook", filenameExtensions: ["xls"], mimeTypes: ["application/vnd.ms-excel"]),
        TypeDeclaration(
            "com.microsoft.powerpoint.ppt", conformsTo: ["public.data", "public.presentation"],
            description: "PowerPoint 97 presentation", filenameExtensions: ["ppt"],
            mimeTypes: ["application/vnd.ms-powerpoint"]),
        TypeDeclaration(
            "org.openxmlformats.openxml", conformsTo: ["public.zip-archive"], description: "Office Open XML"),
        TypeDeclaration(
            "org.openxmlformats.wordprocessingml.document",
            conformsTo: ["org.openxmlformats.openxml", "public.composite-content"],
            description: "Word document", filenameExtensions: ["docx"],
            mimeTypes: ["application/vnd.openxmlformats-officedocument.wordprocessingml.document"]),
        TypeDeclaration(
            "org.openxmlformats.spreadsheetml.sheet", conformsTo: ["org.openxmlformats.openxml", "public.spreadsheet"],
            description: "Excel workbook", filenameExtensions: ["xlsx"],
            mimeTypes: ["application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"]),
        TypeDeclaration(
            "org.openxmlformats.presentationml.presentation",
            conformsTo: ["org.openxmlformats.openxml", "public.presentation"],
            description: "PowerPoint presentation", filenameExtensions: ["pptx"],
            mimeTypes: ["application/vnd.openxmlformats-officedocument.presentationml.presentation"]),
        TypeDeclaration("org.oasis-open.opendocument", conformsTo: ["public.data"], description: "OpenDocument"),
        TypeDeclaration(
            "org.oasis-open.opendocument.text",
            conformsTo: ["org.oasis-open.opendocument", "public.composite-content"],
            description: "OpenDocument text", filenameExtensions: ["odt"],
            mimeTypes: ["application/vnd.oasis.opendocument.text"]),
        TypeDeclaration(
            "org.oasis-open.opendocument.spreadsheet",
            conformsTo: ["org.oasis-open.opendocument", "public.spreadsheet"],
            description: "OpenDocument spreadsheet", filenameExtensions: ["ods"],
            mimeTypes: ["application/vnd.oasis.opendocument.spreadsheet"]),
        TypeDeclaration(
            "org.oasis-open.opendocument.presentation",
            conformsTo: ["org.oasis-open.opendocument", "public.presentation"],
            description: "OpenDocument presentation", filenameExtensions: ["odp"],
            mimeTypes: ["application/vnd.oasis.opendocument.presentation"]),
    ]

    /// Audio, video and playlists.
    private static let audiovisualTypes: [TypeDeclaration] = [
        TypeDeclaration(
            "public.audiovisual-content", conformsTo: ["public.data", "public.content"],
            description: "audiovisual content"),
        TypeDeclaration("public.movie", conformsTo: ["public.audiovisual-content"], description: "movie"),
        TypeDeclaration("public.video", conformsTo: ["public.movie"], description: "video"),
        TypeDeclaration("public.audio", conformsTo: ["public.audiovisual-content"], description: "audio"),
        TypeDeclaration(
            "com.apple.quicktime-movie", conformsTo: ["public.movie"], description: "QuickTime movie",
            filenameExtensions: ["mov", "qt"], mimeTypes: ["video/quicktime"]),
        TypeDeclaration(
            "public.mpeg", conformsTo: ["public.movie"], description: "MPEG movie",
            filenameExtensions: ["mpg", "mpeg", "mpe", "m75", "m15"],
            mimeTypes: ["video/mpeg", "video/mpg", "video/x-mpeg", "video/x-mpg"]),
        TypeDeclaration(
            "public.mpeg-2-video", conformsTo: ["public.video"], description: "MPEG-2 video",
            filenameExtensions: ["m2v"], mimeTypes: ["video/mpeg2", "video/mpeg2-video"]),
        TypeDeclaration(
            "public.mpeg-2-transport-stream", conformsTo: ["public.movie"], description: "MPEG-2 transport stream",
            filenameExtensions: ["ts"]),
        TypeDeclaration(
            "public.mpeg-4", conformsTo: ["public.movie"], description: "MPEG-4 movie",
            filenameExtensions: ["mp4", "mpg4"], mimeTypes: ["video/mp4", "video/mp4v-es"]),
        TypeDeclaration(
            "com.apple.m4v-video", conformsTo: ["public.mpeg-4"], description: "Apple MPEG-4 movie",
            filenameExtensions: ["m4v"], mimeTypes: ["video/x-m4v"]),
        TypeDeclaration(
            "com.apple.protected-mpeg-4-video", conformsTo: ["com.apple.m4v-video"],
            description: "protected MPEG-4 movie"),
        TypeDeclaration(
            "public.avi", conformsTo: ["public.movie"], description: "AVI movie",
            filenameExtensions: ["avi", "vfw"], mimeTypes: ["video/avi", "video/msvideo", "video/x-msvideo"]),
        TypeDeclaration(
            "public.3gpp", conformsTo: ["public.movie"], description: "3GPP movie",
            filenameExtensions: ["3gp", "3gpp", "sdv"], mimeTypes: ["video/3gpp", "audio/3gpp"]),
        TypeDeclaration(
            "public.3gpp2", conformsTo: ["public.movie"], description: "3GPP2 movie",
            filenameExtensions: ["3g2", "3gp2"], mimeTypes: ["video/3gpp2", "audio/3gpp2"]),
        TypeDeclaration(
            "public.dv-movie", conformsTo: ["public.movie"], description: "DV movie",
            filenameExtensions: ["dv", "dif"], mimeTypes: ["video/x-dv"]),
        TypeDeclaration(
            "org.webmproject.webm", conformsTo: ["public.movie"], description: "WebM movie",
            filenameExtensions: ["webm"], mimeTypes: ["video/webm"]),
        TypeDeclaration(
            "com.microsoft.windows-media-wmv", conformsTo: ["public.movie"], description: "Windows Media video",
            filenameExtensions: ["wmv"], mimeTypes: ["video/x-ms-wmv"]),
        TypeDeclaration(
            "public.mp3", conformsTo: ["public.audio"], description: "MP3 audio",
            filenameExtensions: ["mp3", "mpga"],
            mimeTypes: [
                "audio/mpeg", "audio/mpeg3", "audio/mpg", "audio/mp3", "audio/x-mpeg", "audio/x-mpeg3", "audio/x-mpg",
                "audio/x-mp3",
            ]),
        TypeDeclaration(
            "public.mp2", conformsTo: ["public.audio"], description: "MP2 audio", filenameExtensions: ["mp2"]),
        TypeDeclaration(
            "public.mpeg-4-audio", conformsTo: ["public.mpeg-4", "public.audio"], description: "MPEG-4 audio",
            filenameExtensions: ["mp4", "mpg4"], mimeTypes: ["audio/mp4", "audio/mp4a-latm"]),
        TypeDeclaration(
            "com.apple.m4a-audio", conformsTo: ["public.mpeg-4-audio"], description: "Apple MPEG-4 audio",
            filenameExtensions: ["m4a"], mimeTypes: ["audio/x-m4a"]),
        TypeDeclaration(
            "com.apple.protected-mpeg-4-audio", conformsTo: ["public.audio"], description: "protected MPEG-4 audio",
            filenameExtensions: ["m4p"]),
        TypeDeclaration(
            "public.aac-audio", conformsTo: ["public.audio"], description: "AAC audio",
            filenameExtensions: ["aac", "adts"], mimeTypes: ["audio/aac", "audio/x-aac"]),
        TypeDeclaration(
            "public.aifc-audio", conformsTo: ["public.audio"], description: "AIFF-C audio",
            filenameExtensions: ["aifc"]),
        TypeDeclaration(
            "public.aiff-audio", conformsTo: ["public.aifc-audio"], description: "AIFF audio",
            filenameExtensions: ["aiff", "aif"], mimeTypes: ["audio/aiff", "audio/x-aiff"]),
        TypeDeclaration(
            "com.microsoft.waveform-audio", conformsTo: ["public.audio"], description: "WAVE audio",
            filenameExtensions: ["wav", "wave"],
            mimeTypes: ["audio/vnd.wave", "audio/wav", "audio/wave", "audio/x-wav"]),
        TypeDeclaration(
            "public.midi-audio", conformsTo: ["public.audio"], description: "MIDI audio",
            filenameExtensions: ["midi", "mid", "smf", "kar"], mimeTypes: ["audio/midi", "audio/x-midi"]),
        TypeDeclaration(
            "public.au-audio", conformsTo: ["public.audio"], description: "AU audio",
            filenameExtensions: ["au", "snd"], mimeTypes: ["audio/basic"]),
        TypeDeclaration(
            "public.ac3-audio", conformsTo: ["public.audio"], description: "AC-3 audio",
            filenameExtensions: ["ac3"], mimeTypes: ["audio/ac3"]),
        TypeDeclaration(
            "com.apple.coreaudio-format", conformsTo: ["public.audio"], description: "Core Audio format",
            filenameExtensions: ["caf"], mimeTypes: ["audio/x-caf"]),
        TypeDeclaration(
            "org.3gpp.adaptive-multi-rate-audio", conformsTo: ["public.audio"], description: "AMR audio",
            filenameExtensions: ["amr"], mimeTypes: ["audio/amr"]),
        TypeDeclaration(
            "org.xiph.flac", conformsTo: ["public.audio"], description: "FLAC audio",
            filenameExtensions: ["flac"], mimeTypes: ["audio/flac"]),
        TypeDeclaration(
            "org.xiph.ogg-audio", conformsTo: ["public.audio"], description: "Ogg audio",
            filenameExtensions: ["ogg", "oga"], mimeTypes: ["audio/ogg"]),
        TypeDeclaration(
            "com.microsoft.windows-media-wma", conformsTo: ["public.audio"], description: "Windows Media audio",
            filenameExtensions: ["wma"], mimeTypes: ["audio/x-ms-wma"]),
        TypeDeclaration("public.playlist", conformsTo: [], description: "playlist"),
        TypeDeclaration(
            "public.m3u-playlist", conformsTo: ["public.plain-text", "public.playlist"], description: "M3U playlist",
            filenameExtensions: ["m3u", "m3u8"],
            mimeTypes: ["audio/mpegurl", "application/vnd.apple.mpegurl", "audio/x-mpegurl"]),
        TypeDeclaration(
            "public.pls-playlist", conformsTo: ["public.text", "public.playlist"], description: "PLS playlist",
            filenameExtensions: ["pls"], mimeTypes: ["audio/x-scpls"]),
    ]

    /// Archives, compressed files and disk images.
    private static let archiveTypes: [TypeDeclaration] = [
        TypeDeclaration("public.archive", conformsTo: [], description: "archive"),
        TypeDeclaration(
            "com.pkware.zip-archive", conformsTo: ["public.data", "public.archive"], description: "PKZip archive"),
        TypeDeclaration(
            "public.zip-archive", conformsTo: ["com.pkware.zip-archive"], description: "ZIP archive",
            filenameExtensions: ["zip"], mimeTypes: ["application/zip", "application/x-zip-compressed"]),
        TypeDeclaration(
            "org.gnu.gnu-zip-archive", conformsTo: ["public.data", "public.archive"], description: "gzip archive",
            filenameExtensions: ["gz", "gzip"], mimeTypes: ["application/x-gzip", "application/gzip"]),
        TypeDeclaration(
            "org.gnu.gnu-zip-tar-archive", conformsTo: ["org.gnu.gnu-zip-archive"], description: "gzip tar archive",
            filenameExtensions: ["tgz"]),
        TypeDeclaration(
            "public.bzip2-archive", conformsTo: ["public.data", "public.archive"], description: "bzip2 archive",
            filenameExtensions: ["bz2", "bz"],
            mimeTypes: [
                "application/x-bzip2", "application/x-bzip", "application/bzip2", "application/bzip",
                "application/x-bz2",
            ]),
        TypeDeclaration(
            "public.tar-bzip2-archive", conformsTo: ["public.bzip2-archive"], description: "bzip2 tar archive",
            filenameExtensions: ["tbz2", "tbz"]),
        TypeDeclaration(
            "org.gnu.gnu-tar-archive", conformsTo: ["public.data", "public.archive"], description: "GNU tar archive",
            filenameExtensions: ["gtar"], mimeTypes: ["application/x-gtar"]),
        TypeDeclaration(
            "public.tar-archive", conformsTo: ["org.gnu.gnu-tar-archive"], description: "tar archive",
            filenameExtensions: ["tar"], mimeTypes: ["application/x-tar", "application/tar"]),
        TypeDeclaration(
            "org.7-zip.7-zip-archive", conformsTo: ["public.data", "public.archive"], description: "7-Zip archive",
            filenameExtensions: ["7z"], mimeTypes: ["application/x-7z-compressed"]),
        TypeDeclaration(
            "com.rarlab.rar-archive", conformsTo: ["public.data", "public.archive"], description: "RAR archive",
            filenameExtensions: ["rar"], mimeTypes: ["application/x-rar-compressed", "application/vnd.rar"]),
        TypeDeclaration(
            "org.tukaani.xz-archive", conformsTo: ["public.data", "public.archive"], description: "XZ archive",
            filenameExtensions: ["xz"], mimeTypes: ["application/x-xz"]),
        TypeDeclaration(
            "public.cpio-archive", conformsTo: ["public.data", "public.archive"], description: "cpio archive",
            filenameExtensions: ["cpio", "pax"]),
        TypeDeclaration(
            "public.z-archive", conformsTo: ["public.data", "public.archive"], description: "compress archive",
            filenameExtensions: ["z"], mimeTypes: ["application/x-compress"]),
        TypeDeclaration(
            "com.apple.archive", conformsTo: ["public.data", "public.archive"], description: "Apple Archive",
            filenameExtensions: ["aar", "yaa"]),
        TypeDeclaration(
            "com.apple.xar-archive", conformsTo: ["public.data", "public.archive"], description: "XAR archive",
            filenameExtensions: ["xar"]),
        TypeDeclaration("public.disk-image", conformsTo: ["public.archive"], description: "disk image"),
        TypeDeclaration(
            "com.apple.disk-image", conformsTo: ["public.data", "public.disk-image"], description: "Apple disk image"),
        TypeDeclaration(
            "com.apple.disk-image-udif", conformsTo: ["com.apple.disk-image"], description: "UDIF disk image",
            filenameExtensions: ["dmg"], mimeTypes: ["application/x-apple-diskimage"]),
        TypeDeclaration(
            "public.iso-image", conformsTo: ["public.data", "public.disk-image"], description: "ISO disk image",
            filenameExtensions: ["iso"], mimeTypes: ["application/x-iso9660-image"]),
    ]

    /// Fonts.
    private static let fontTypes: [TypeDeclaration] = [
        TypeDeclaration("public.font", conformsTo: ["public.data"], description: "font"),
        TypeDeclaration("public.truetype-font", conformsTo: ["public.font"], description: "TrueType font"),
        TypeDeclaration(
            "public.truetype-ttf-font", conformsTo: ["public.truetype-font"], description: "TrueType font file",
            filenameExtensions: ["ttf"], mimeTypes: ["font/ttf"]),
        TypeDeclaration(
            "public.truetype-collection-font", conformsTo: ["public.truetype-font"],
            description: "TrueType collection font", filenameExtensions: ["ttc"]),
        TypeDeclaration(
            "public.opentype-font", conformsTo: ["public.font"], description: "OpenType font",
            filenameExtensions: ["otf"], mimeTypes: ["font/otf"]),
        TypeDeclaration("com.adobe.postscript-font", conformsTo: ["public.font"], description: "PostScript font"),
        TypeDeclaration(
            "com.adobe.postscript-pfa-font", conformsTo: ["com.adobe.postscript-font"],
            description: "PostScript Type 1 font (ASCII)", filenameExtensions: ["pfa"]),
        TypeDeclaration(
            "com.adobe.postscript-pfb-font", conformsTo: ["com.adobe.postscript-font"],
            description: "PostScript Type 1 font (binary)", filenameExtensions: ["pfb"],
            mimeTypes: ["font/x-postscript-pfb", "application/x-font-type1"]),
    ]

    /// 3D scenes and models.
    private static let threeDimensionalTypes: [TypeDeclaration] = [
        TypeDeclaration("public.3d-content", conformsTo: ["public.content"], description: "3D content"),
        TypeDeclaration(
            "com.pixar.universal-scene-description", conformsTo: ["public.3d-content", "public.data"],
            description: "Universal Scene Description", filenameExtensions: ["usd", "usda", "usdc"]),
        TypeDeclaration(
            "com.pixar.universal-scene-description-mobile", conformsTo: ["public.3d-content", "public.data"],
            description: "Universal Scene Description package", filenameExtensions: ["usdz"],
            mimeTypes: ["model/vnd.usdz+zip"]),
        TypeDeclaration(
            "com.apple.reality", conformsTo: ["public.data"], description: "Reality file",
            filenameExtensions: ["reality"], mimeTypes: ["model/vnd.reality"]),
        TypeDeclaration(
            "com.apple.scenekit.scene", conformsTo: ["public.data", "public.3d-content"],
            description: "SceneKit scene", filenameExtensions: ["scn", "scnz"]),
        TypeDeclaration(
            "com.apple.arobject", conformsTo: ["public.data"], description: "AR reference object",
            filenameExtensions: ["arobject"]),
        TypeDeclaration(
            "public.geometry-definition-format", conformsTo: ["public.3d-content", "public.text"],
            description: "Wavefront OBJ model", filenameExtensions: ["obj"]),
        TypeDeclaration(
            "public.standard-tesselated-geometry-format", conformsTo: ["public.3d-content", "public.data"],
            description: "STL model", filenameExtensions: ["stl"]),
        TypeDeclaration(
            "public.polygon-file-format", conformsTo: ["public.3d-content", "public.data"],
            description: "PLY model", filenameExtensions: ["ply"]),
    ]

    /// Databases, bookmarks and certificates.
    private static let miscellaneousTypes: [TypeDeclaration] = [
        TypeDeclaration("public.database", conformsTo: [], description: "database"),
        TypeDeclaration("public.bookmark", conformsTo: [], description: "bookmark"),
        TypeDeclaration(
            "public.x509-certificate", conformsTo: ["public.data"], description: "X.509 certificate",
            filenameExtensions: ["cer", "der", "crt", "pem"], mimeTypes: ["application/x-x509-ca-cert"]),
        TypeDeclaration(
            "com.rsa.pkcs-12", conformsTo: ["public.data"], description: "PKCS #12 archive",
            filenameExtensions: ["p12", "pfx"], mimeTypes: ["application/x-pkcs12"]),
        TypeDeclaration(
            "com.apple.colorsync-profile", conformsTo: ["public.data"], description: "ICC colour profile",
            filenameExtensions: ["icc", "icm"], mimeTypes: ["application/vnd.iccprofile"]),
    ]
}
