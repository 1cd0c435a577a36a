extension TypeDeclaration {
    /// Apple's public system types, with their direct parents and tags as Apple declares them.
    static let builtin: [TypeDeclaration] = [
        TypeDeclaration("public.item", conformsTo: [], description: "item"),
        TypeDeclaration("public.content", conformsTo: [], description: "content"),
        TypeDeclaration("public.data", conformsTo: ["public.item"], description: "data"),
        TypeDeclaration("public.directory", conformsTo: ["public.item"], description: "directory"),
        TypeDeclaration("public.folder", conformsTo: ["public.directory"], description: "folder"),
        TypeDeclaration(
            "public.text", conformsTo: ["public.data", "public.content"], description: "text",
            mimeTypes: ["text/*"]),
        TypeDeclaration(
            "public.plain-text", conformsTo: ["public.text"], description: "plain text",
            filenameExtensions: ["txt", "text"], mimeTypes: ["text/plain"]),
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
            "public.heif-standard", conformsTo: ["public.image"], description: "HEIF standard image"),
        TypeDeclaration(
            "public.heic", conformsTo: ["public.heif-standard"], description: "HEIC image",
            filenameExtensions: ["heic"], mimeTypes: ["image/heic"]),
        TypeDeclaration(
            "public.heif", conformsTo: ["public.heif-standard"], description: "HEIF image",
            filenameExtensions: ["heif"], mimeTypes: ["image/heif"]),
        TypeDeclaration(
            "com.adobe.pdf", conformsTo: ["public.data", "public.composite-content"], description: "PDF document",
            filenameExtensions: ["pdf"], mimeTypes: ["application/pdf"]),
        TypeDeclaration(
            "public.composite-content", conformsTo: ["public.content"], description: "composite content"),
        TypeDeclaration(
            "public.json", conformsTo: ["public.text"], description: "JSON",
            filenameExtensions: ["json"], mimeTypes: ["application/json"]),
        TypeDeclaration(
            "public.delimited-values-text", conformsTo: ["public.text"], description: "delimited values"),
        TypeDeclaration(
            "public.comma-separated-values-text", conformsTo: ["public.delimited-values-text"],
            description: "CSV", filenameExtensions: ["csv"], mimeTypes: ["text/csv", "text/comma-separated-values"]),
        TypeDeclaration(
            "public.archive", conformsTo: ["public.data"], description: "archive"),
        TypeDeclaration(
            "public.zip-archive", conformsTo: ["public.data", "public.archive"], description: "ZIP archive",
            filenameExtensions: ["zip"], mimeTypes: ["application/zip"]),
        TypeDeclaration(
            "public.url", conformsTo: ["public.data"], description: "URL"),
        TypeDeclaration("public.file-url", conformsTo: ["public.url"], description: "file URL"),
        TypeDeclaration(
            "public.audiovisual-content", conformsTo: ["public.data", "public.content"], description: "media"),
        TypeDeclaration("public.movie", conformsTo: ["public.audiovisual-content"], description: "movie"),
        TypeDeclaration("public.audio", conformsTo: ["public.audiovisual-content"], description: "audio"),
    ]
}
