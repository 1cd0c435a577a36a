#if os(Linux)
extension UTType {
    // Apple's static system types; the registry declares every one of them under this spelling (a test checks).
    /// `public.item`: the base type of every physical item.
    public static let item = UTType(canonical: "public.item")
    /// `public.content`: the base type of anything with content.
    public static let content = UTType(canonical: "public.content")
    /// `public.composite-content`: content made of several parts.
    public static let compositeContent = UTType(canonical: "public.composite-content")
    /// `public.disk-image`: a disk image.
    public static let diskImage = UTType(canonical: "public.disk-image")
    /// `public.data`: any sequence of bytes.
    public static let data = UTType(canonical: "public.data")
    /// `public.directory`: a directory.
    public static let directory = UTType(canonical: "public.directory")
    /// `com.apple.resolvable`: an item that resolves to another.
    public static let resolvable = UTType(canonical: "com.apple.resolvable")
    /// `public.symlink`: a symbolic link.
    public static let symbolicLink = UTType(canonical: "public.symlink")
    /// `public.executable`: an executable item.
    public static let executable = UTType(canonical: "public.executable")
    /// `com.apple.mount-point`: a volume's mount point.
    public static let mountPoint = UTType(canonical: "com.apple.mount-point")
    /// `com.apple.alias-file`: an alias file.
    public static let aliasFile = UTType(canonical: "com.apple.alias-file")
    /// `com.apple.bookmark`: URL bookmark data.
    public static let urlBookmarkData = UTType(canonical: "com.apple.bookmark")
    /// `public.url`: a URL.
    public static let url = UTType(canonical: "public.url")
    /// `public.file-url`: a URL to a file.
    public static let fileURL = UTType(canonical: "public.file-url")
    /// `public.text`: text of any encoding or markup.
    public static let text = UTType(canonical: "public.text")
    /// `public.plain-text`: plain text without markup.
    public static let plainText = UTType(canonical: "public.plain-text")
    /// `public.utf8-plain-text`: UTF-8 plain text.
    public static let utf8PlainText = UTType(canonical: "public.utf8-plain-text")
    /// `public.utf16-external-plain-text`: UTF-16 plain text with a byte-order mark.
    public static let utf16ExternalPlainText = UTType(canonical: "public.utf16-external-plain-text")
    /// `public.utf16-plain-text`: UTF-16 plain text in native byte order.
    public static let utf16PlainText = UTType(canonical: "public.utf16-plain-text")
    /// `public.delimited-values-text`: text of delimited values.
    public static let delimitedText = UTType(canonical: "public.delimited-values-text")
    /// `public.comma-separated-values-text`: comma-separated values.
    public static let commaSeparatedText = UTType(canonical: "public.comma-separated-values-text")
    /// `public.tab-separated-values-text`: tab-separated values.
    public static let tabSeparatedText = UTType(canonical: "public.tab-separated-values-text")
    /// `public.utf8-tab-separated-values-text`: UTF-8 tab-separated values.
    public static let utf8TabSeparatedText = UTType(canonical: "public.utf8-tab-separated-values-text")
    /// `public.rtf`: Rich Text Format.
    public static let rtf = UTType(canonical: "public.rtf")
    /// `public.html`: HTML.
    public static let html = UTType(canonical: "public.html")
    /// `public.xml`: XML.
    public static let xml = UTType(canonical: "public.xml")
    /// `public.yaml`: YAML.
    public static let yaml = UTType(canonical: "public.yaml")
    /// `public.source-code`: source code of any language.
    public static let sourceCode = UTType(canonical: "public.source-code")
    /// `public.assembly-source`: assembly language source.
    public static let assemblyLanguageSource = UTType(canonical: "public.assembly-source")
    /// `public.c-source`: C source.
    public static let cSource = UTType(canonical: "public.c-source")
    /// `public.objective-c-source`: Objective-C source.
    public static let objectiveCSource = UTType(canonical: "public.objective-c-source")
    /// `public.swift-source`: Swift source.
    public static let swiftSource = UTType(canonical: "public.swift-source")
    /// `public.c-plus-plus-source`: C++ source.
    public static let cPlusPlusSource = UTType(canonical: "public.c-plus-plus-source")
    /// `public.objective-c-plus-plus-source`: Objective-C++ source.
    public static let objectiveCPlusPlusSource = UTType(canonical: "public.objective-c-plus-plus-source")
    /// `public.c-header`: a C header.
    public static let cHeader = UTType(canonical: "public.c-header")
    /// `public.c-plus-plus-header`: a C++ header.
    public static let cPlusPlusHeader = UTType(canonical: "public.c-plus-plus-header")
    /// `public.script`: a script of any language.
    public static let script = UTType(canonical: "public.script")
    /// `com.apple.applescript.text`: AppleScript text.
    public static let appleScript = UTType(canonical: "com.apple.applescript.text")
    /// `com.apple.applescript.script`: a compiled OSA script.
    public static let osaScript = UTType(canonical: "com.apple.applescript.script")
    /// `com.netscape.javascript-source`: JavaScript source.
    public static let javaScript = UTType(canonical: "com.netscape.javascript-source")
    /// `public.shell-script`: a shell script.
    public static let shellScript = UTType(canonical: "public.shell-script")
    /// `public.perl-script`: a Perl script.
    public static let perlScript = UTType(canonical: "public.perl-script")
    /// `public.python-script`: a Python script.
    public static let pythonScript = UTType(canonical: "public.python-script")
    /// `public.ruby-script`: a Ruby script.
    public static let rubyScript = UTType(canonical: "public.ruby-script")
    /// `public.php-script`: a PHP script.
    public static let phpScript = UTType(canonical: "public.php-script")
    /// `public.make-source`: a makefile.
    public static let makefile = UTType(canonical: "public.make-source")
    /// `public.json`: JSON.
    public static let json = UTType(canonical: "public.json")
    /// `com.apple.property-list`: a property list.
    public static let propertyList = UTType(canonical: "com.apple.property-list")
    /// `com.apple.xml-property-list`: an XML property list.
    public static let xmlPropertyList = UTType(canonical: "com.apple.xml-property-list")
    /// `com.apple.binary-property-list`: a binary property list.
    public static let binaryPropertyList = UTType(canonical: "com.apple.binary-property-list")
    /// `com.adobe.pdf`: a PDF document.
    public static let pdf = UTType(canonical: "com.adobe.pdf")
    /// `com.apple.rtfd`: a Rich Text Format Directory.
    public static let rtfd = UTType(canonical: "com.apple.rtfd")
    /// `com.apple.flat-rtfd`: a flattened Rich Text Format Directory.
    public static let flatRTFD = UTType(canonical: "com.apple.flat-rtfd")
    /// `com.apple.webarchive`: a web archive.
    public static let webArchive = UTType(canonical: "com.apple.webarchive")
    /// `public.image`: an image of any format.
    public static let image = UTType(canonical: "public.image")
    /// `public.jpeg`: a JPEG image.
    public static let jpeg = UTType(canonical: "public.jpeg")
    /// `public.tiff`: a TIFF image.
    public static let tiff = UTType(canonical: "public.tiff")
    /// `com.compuserve.gif`: a GIF image.
    public static let gif = UTType(canonical: "com.compuserve.gif")
    /// `public.png`: a PNG image.
    public static let png = UTType(canonical: "public.png")
    /// `com.apple.icns`: an Apple icon.
    public static let icns = UTType(canonical: "com.apple.icns")
    /// `com.microsoft.bmp`: a Windows bitmap.
    public static let bmp = UTType(canonical: "com.microsoft.bmp")
    /// `com.microsoft.ico`: a Windows icon.
    public static let ico = UTType(canonical: "com.microsoft.ico")
    /// `public.camera-raw-image`: a camera's raw image.
    public static let rawImage = UTType(canonical: "public.camera-raw-image")
    /// `public.svg-image`: an SVG image.
    public static let svg = UTType(canonical: "public.svg-image")
    /// `public.heif`: a HEIF image.
    public static let heif = UTType(canonical: "public.heif")
    /// `public.heic`: a HEIC image.
    public static let heic = UTType(canonical: "public.heic")
    /// `org.webmproject.webp`: a WebP image.
    public static let webP = UTType(canonical: "org.webmproject.webp")
    /// `com.ilm.openexr-image`: an OpenEXR image.
    public static let exr = UTType(canonical: "com.ilm.openexr-image")
    /// `public.3d-content`: three-dimensional content.
    public static let threeDContent = UTType(canonical: "public.3d-content")
    /// `com.pixar.universal-scene-description`: Universal Scene Description.
    public static let usd = UTType(canonical: "com.pixar.universal-scene-description")
    /// `com.pixar.universal-scene-description-mobile`: Universal Scene Description, packaged.
    public static let usdz = UTType(canonical: "com.pixar.universal-scene-description-mobile")
    /// `com.apple.reality`: a Reality File.
    public static let realityFile = UTType(canonical: "com.apple.reality")
    /// `com.apple.scenekit.scene`: a SceneKit scene.
    public static let sceneKitScene = UTType(canonical: "com.apple.scenekit.scene")
    /// `com.apple.arobject`: an AR reference object.
    public static let arReferenceObject = UTType(canonical: "com.apple.arobject")
    /// `public.audiovisual-content`: audio, video or both.
    public static let audiovisualContent = UTType(canonical: "public.audiovisual-content")
    /// `public.movie`: media with video, audio or both.
    public static let movie = UTType(canonical: "public.movie")
    /// `public.video`: media with video only.
    public static let video = UTType(canonical: "public.video")
    /// `public.audio`: media with audio only.
    public static let audio = UTType(canonical: "public.audio")
    /// `com.apple.quicktime-movie`: a QuickTime movie.
    public static let quickTimeMovie = UTType(canonical: "com.apple.quicktime-movie")
    /// `public.mpeg`: an MPEG-1 or MPEG-2 movie.
    public static let mpeg = UTType(canonical: "public.mpeg")
    /// `public.mpeg-2-video`: an MPEG-2 video.
    public static let mpeg2Video = UTType(canonical: "public.mpeg-2-video")
    /// `public.mpeg-2-transport-stream`: an MPEG-2 transport stream.
    public static let mpeg2TransportStream = UTType(canonical: "public.mpeg-2-transport-stream")
    /// `public.mp3`: MP3 audio.
    public static let mp3 = UTType(canonical: "public.mp3")
    /// `public.mpeg-4`: an MPEG-4 movie.
    public static let mpeg4Movie = UTType(canonical: "public.mpeg-4")
    /// `public.mpeg-4-audio`: MPEG-4 audio.
    public static let mpeg4Audio = UTType(canonical: "public.mpeg-4-audio")
    /// `com.apple.protected-mpeg-4-audio`: protected MPEG-4 audio.
    public static let appleProtectedMPEG4Audio = UTType(canonical: "com.apple.protected-mpeg-4-audio")
    /// `com.apple.protected-mpeg-4-video`: protected MPEG-4 video.
    public static let appleProtectedMPEG4Video = UTType(canonical: "com.apple.protected-mpeg-4-video")
    /// `public.avi`: an AVI movie.
    public static let avi = UTType(canonical: "public.avi")
    /// `public.aiff-audio`: AIFF audio.
    public static let aiff = UTType(canonical: "public.aiff-audio")
    /// `com.microsoft.waveform-audio`: WAVE audio.
    public static let wav = UTType(canonical: "com.microsoft.waveform-audio")
    /// `public.midi-audio`: MIDI audio.
    public static let midi = UTType(canonical: "public.midi-audio")
    /// `public.playlist`: a playlist.
    public static let playlist = UTType(canonical: "public.playlist")
    /// `public.m3u-playlist`: an M3U playlist.
    public static let m3uPlaylist = UTType(canonical: "public.m3u-playlist")
    /// `public.folder`: a folder.
    public static let folder = UTType(canonical: "public.folder")
    /// `public.volume`: a volume.
    public static let volume = UTType(canonical: "public.volume")
    /// `com.apple.package`: a directory shown as one file.
    public static let package = UTType(canonical: "com.apple.package")
    /// `com.apple.bundle`: a bundle.
    public static let bundle = UTType(canonical: "com.apple.bundle")
    /// `com.apple.plugin`: a plug-in bundle.
    public static let pluginBundle = UTType(canonical: "com.apple.plugin")
    /// `com.apple.xpc-service`: an XPC service bundle.
    public static let xpcService = UTType(canonical: "com.apple.xpc-service")
    /// `com.apple.framework`: a framework bundle.
    public static let framework = UTType(canonical: "com.apple.framework")
    /// `com.apple.application`: an application.
    public static let application = UTType(canonical: "com.apple.application")
    /// `com.apple.application-bundle`: an application bundle.
    public static let applicationBundle = UTType(canonical: "com.apple.application-bundle")
    /// `com.apple.application-and-system-extension`: an application extension.
    public static let applicationExtension = UTType(canonical: "com.apple.application-and-system-extension")
    /// `public.unix-executable`: a Unix executable.
    public static let unixExecutable = UTType(canonical: "public.unix-executable")
    /// `com.microsoft.windows-executable`: a Windows executable.
    public static let exe = UTType(canonical: "com.microsoft.windows-executable")
    /// `public.archive`: an archive of files and directories.
    public static let archive = UTType(canonical: "public.archive")
    /// `org.gnu.gnu-zip-archive`: a GZIP archive.
    public static let gzip = UTType(canonical: "org.gnu.gnu-zip-archive")
    /// `public.bzip2-archive`: a bzip2 archive.
    public static let bz2 = UTType(canonical: "public.bzip2-archive")
    /// `public.zip-archive`: a ZIP archive.
    public static let zip = UTType(canonical: "public.zip-archive")
    /// `com.apple.archive`: an Apple Archive.
    public static let appleArchive = UTType(canonical: "com.apple.archive")
    /// `public.tar-archive`: a tar archive.
    public static let tarArchive = UTType(canonical: "public.tar-archive")
    /// `public.spreadsheet`: a spreadsheet.
    public static let spreadsheet = UTType(canonical: "public.spreadsheet")
    /// `public.presentation`: a presentation.
    public static let presentation = UTType(canonical: "public.presentation")
    /// `public.database`: a database.
    public static let database = UTType(canonical: "public.database")
    /// `public.message`: a message.
    public static let message = UTType(canonical: "public.message")
    /// `public.contact`: a contact.
    public static let contact = UTType(canonical: "public.contact")
    /// `public.vcard`: a vCard.
    public static let vCard = UTType(canonical: "public.vcard")
    /// `public.to-do-item`: a to-do item.
    public static let toDoItem = UTType(canonical: "public.to-do-item")
    /// `public.calendar-event`: a calendar event.
    public static let calendarEvent = UTType(canonical: "public.calendar-event")
    /// `public.email-message`: an e-mail message.
    public static let emailMessage = UTType(canonical: "public.email-message")
    /// `public.font`: a font.
    public static let font = UTType(canonical: "public.font")
    /// `public.bookmark`: a bookmark.
    public static let bookmark = UTType(canonical: "public.bookmark")
    /// `com.rsa.pkcs-12`: a PKCS #12 archive.
    public static let pkcs12 = UTType(canonical: "com.rsa.pkcs-12")
    /// `public.x509-certificate`: an X.509 certificate.
    public static let x509Certificate = UTType(canonical: "public.x509-certificate")
    /// `org.idpf.epub-container`: an EPUB document.
    public static let epub = UTType(canonical: "org.idpf.epub-container")
    /// `public.log`: a log file.
    public static let log = UTType(canonical: "public.log")

    /// Every static system type above, for tests that check them against the registry.
    static let systemTypes: [UTType] = [
        .item, .content, .compositeContent, .diskImage, .data, .directory, .resolvable, .symbolicLink, .executable,
        .mountPoint, .aliasFile, .urlBookmarkData, .url, .fileURL, .text, .plainText, .utf8PlainText,
        .utf16ExternalPlainText, .utf16PlainText, .delimitedText, .commaSeparatedText, .tabSeparatedText,
        .utf8TabSeparatedText, .rtf, .html, .xml, .yaml, .sourceCode, .assemblyLanguageSource, .cSource,
        .objectiveCSource, .swiftSource, .cPlusPlusSource, .objectiveCPlusPlusSource, .cHeader, .cPlusPlusHeader,
        .script, .appleScript, .osaScript, .javaScript, .shellScript, .perlScript, .pythonScript, .rubyScript,
        .phpScript, .makefile, .json, .propertyList, .xmlPropertyList, .binaryPropertyList, .pdf, .rtfd, .flatRTFD,
        .webArchive, .image, .jpeg, .tiff, .gif, .png, .icns, .bmp, .ico, .rawImage, .svg, .heif, .heic, .webP, .exr,
        .threeDContent, .usd, .usdz, .realityFile, .sceneKitScene, .arReferenceObject, .audiovisualContent, .movie,
        .video, .audio, .quickTimeMovie, .mpeg, .mpeg2Video, .mpeg2TransportStream, .mp3, .mpeg4Movie, .mpeg4Audio,
        .appleProtectedMPEG4Audio, .appleProtectedMPEG4Video, .avi, .aiff, .wav, .midi, .playlist, .m3uPlaylist,
        .folder, .volume, .package, .bundle, .pluginBundle, .xpcService, .framework, .application, .applicationBundle,
        .applicationExtension, .unixExecutable, .exe, .archive, .gzip, .bz2, .zip, .appleArchive, .tarArchive,
        .spreadsheet, .presentation, .database, .message, .contact, .vCard, .toDoItem, .calendarEvent, .emailMessage,
        .font, .bookmark, .pkcs12, .x509Certificate, .epub, .log,
    ]
}
#endif
