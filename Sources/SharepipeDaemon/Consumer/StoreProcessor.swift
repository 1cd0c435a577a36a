import Foundation
import SharepipeIngest
import SharepipeSpool
import SharepipeSystem

/// Moves each copy into `OUTPUT/<group>/` — group by conformance: image, video, audio, pdf, text, archive, other —
/// under a name built from the suggested name, sanitised, and made unique as `name (1).ext`, `name (2).ext` …; or,
/// with a `StorePath` template, wherever the template puts it under `OUTPUT` (never outside it).
///
/// It never overwrites (every final name is made with `renameat2(RENAME_NOREPLACE)` or `link`, which fail when the
/// name exists; where the output's file system refuses the rename flag — NFS, most FUSE file systems — the copy is
/// linked to its final name and then unlinked from `processing/S`) and never follows a symlink inside the output tree (each group directory is opened with
/// `O_NOFOLLOW | O_DIRECTORY` and everything happens relative to that descriptor). The output directory itself may
/// be a symlink: it is the user's choice.
///
/// At-least-once without duplicates: a copy that is no longer in `processing/S` was moved out by an earlier attempt
/// of this share that crashed before its success was recorded, so it is skipped. Across file systems (EXDEV) the
/// copy goes to `.sharepipe-<file-id>.tmp` in the group directory, is fsynced, linked to its final name, and only
/// then are the copy and the temporary removed; a retry that finds the temporary with two links knows the final
/// name exists and only finishes the clean-up, one with a single link starts the copy again. Likewise a copy still
/// in `processing/S` with two links was linked to its final name by an attempt that died before unlinking it.
/// Temporaries a crash left behind are removed at the next start (`removeLeftTemporaries`).
package struct StoreProcessor: Processor {
    /// The output directory (`--output`).
    package let output: String
    /// Where each copy goes under `output` (`--store-path`).
    package let path: StorePath
    /// Types and conformance, to choose the group.
    package let registry: TypeRegistry

    /// The groups, in the order their types are tried.
    static let groups: [(name: String, type: String)] = [
        ("image", "public.image"), ("video", "public.movie"), ("audio", "public.audio"), ("pdf", "com.adobe.pdf"),
        ("text", "public.text"), ("archive", "public.archive"),
    ]

    /// A processor storing into `output`, created when missing, at the places `path` gives.
    package init(output: String, path: StorePath = .default, registry: TypeRegistry = .standard) {
        self.output = output
        self.path = path
        self.registry = registry
    }

    /// Stores every copy of the share; the directories they went to are fsynced before it returns.
    package func process(_ share: ClaimedShare) async throws {
        try System.makeDirectories(output, mode: 0o755)
        let root = try FileDescriptor.openDirectory(output, followingSymlink: true)
        let capabilities = try FileSystemCapabilities.probeOnce(output)
        let date = Self.day(of: share.manifest.createdAt)
        let folder = share.manifest.folder.map { Self.sanitizedName($0, fallback: "folder") } ?? ""
        let placed = share.attachments.map { attachment in
            let name = Self.sanitizedName(attachment.suggestedName, fallback: attachment.path.lastComponent)
            let components = path.components([
                .group: group(for: attachment.typeIdentifier), .share: share.shareId, .folder: folder, .name: name,
                .date: date,
            ])
            return (directories: Array(components.dropLast()), name: components.last ?? name, attachment: attachment)
        }
        let byDirectory = Dictionary(grouping: placed) { $0.directories }
        for (directories, items) in byDirectory.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
            let directory = try Self.openDirectories(directories, in: root.rawValue)
            for item in items {
                try store(item.attachment, name: item.name, in: directory.rawValue, capabilities: capabilities)
            }
            try directory.sync()
        }
    }

    /// `YYYY-MM-DD` of an RFC 3339 time; today (UTC) when the manifest's time is not one.
    static func day(of time: String) -> String {
        let digits = time.prefix(10)
        let shaped = digits.count == 10 && digits.enumerated().allSatisfy { index, character in
            index == 4 || index == 7 ? character == "-" : character.isASCII && character.isNumber
        }
        return shaped ? String(digits) : String(Date().rfc3339.prefix(10))
    }

    /// Opens (creating what is missing) each directory below `root` in turn, never following a symlink.
    private static func openDirectories(_ components: [String], in root: Int32) throws -> FileDescriptor {
        var directory = try FileDescriptor.openDirectory(".", relativeTo: root)
        for component in components {
            let next = try openGroup(component, in: directory.rawValue)
            directory = next
        }
        return directory
    }

    /// The output group of a type.
    func group(for type: String) -> String {
        Self.groups.first { registry.conforms(type, to: $0.type) }?.name ?? "other"
    }

    private static func openGroup(_ group: String, in root: Int32) throws -> FileDescriptor {
        if try System.makeDirectory(group, relativeTo: root, mode: 0o755) {
            // A new directory is only durable once its parent is.
            try System.sync(descriptor: root)
        }
        do {
            return try FileDescriptor.openDirectory(group, relativeTo: root)
        } catch let error as ShareError where error.errno == Errno.symlinkLoop || error.errno == Errno.notDirectory {
            throw ShareError(.io, "output directory \(group) is a symlink or not a directory", errno: error.errno)
        }
    }

    private func store(
        _ attachment: ClaimedShare.Attachment, name: String, in directory: Int32, capabilities: FileSystemCapabilities
    ) throws {
        let temporary = Self.temporaryPrefix + attachment.fileId + Self.temporarySuffix
        guard let copy = try System.lstatIfPresent(attachment.path) else {
            // Stored by an earlier attempt; only its cross-device temporary may be left.
            try System.removeTree(temporary, relativeTo: directory)
            return
        }
        if !capabilities.renameNoReplace && copy.linkCount >= 2 {
            // Linked to its final name by an earlier attempt that died before unlinking it (a copy in staging is
            // always a file of its own, with one link).
            try System.unlink(attachment.path)
            return
        }
        for candidate in Self.candidates(name) {
            do {
                let moved = capabilities.renameNoReplace
                    ? try System.renameNoReplace(attachment.path, to: candidate, toDirectory: directory)
                    : try System.moveFileByLink(attachment.path, to: candidate, toDirectory: directory)
                if moved { return }
            } catch let error as ShareError where error.errno == Errno.crossDevice {
                try storeAcrossDevices(attachment, name: name, temporary: temporary, in: directory)
                return
            }
        }
        throw ShareError(.io, "no free name left in the output group", errno: Errno.exists)
    }

    private func storeAcrossDevices(
        _ attachment: ClaimedShare.Attachment, name: String, temporary: String, in directory: Int32
    ) throws {
        switch try System.linkCount(temporary, relativeTo: directory) {
        case let links? where links >= 2:
            break
        case let links:
            if links != nil { try System.unlink(temporary, relativeTo: directory) }
            try copy(attachment.path, to: temporary, in: directory)
            guard try Self.candidates(name).contains(where: { candidate in
                try System.linkNoReplace(temporary, to: candidate, fromDirectory: directory, toDirectory: directory)
            }) else {
                throw ShareError(.io, "no free name left in the output group", errno: Errno.exists)
            }
            try System.sync(descriptor: directory)
        }
        try System.unlink(attachment.path)
        do {
            try System.unlink(temporary, relativeTo: directory)
        } catch let error as ShareError where error.errno == Errno.noEntry {
            // Removed by another process's start-up sweep: its final name stands.
        }
    }

    /// The copy is written under an exclusive `flock`, so that another process's start-up sweep leaves it alone.
    private func copy(_ source: String, to temporary: String, in directory: Int32) throws {
        let input = try FileDescriptor.openForReading(source)
        let output = try FileDescriptor.create(temporary, relativeTo: directory)
        _ = try output.lock(exclusive: true, nonBlocking: true)
        try System.copyContents(from: input, to: output)
        try output.sync()
    }

    static let temporaryPrefix = ".sharepipe-"
    static let temporarySuffix = ".tmp"

    /// Removes the cross-device temporaries (`.sharepipe-<file-id>.tmp`) that crashed attempts left in the output's
    /// directories, down to the depth of the store-path template, and returns how many. Only names the store makes
    /// are touched (the prefix, a UUID, the suffix), only those with a single link, and none that a live copy holds
    /// locked: such a temporary is an unfinished copy whose source is still in `processing/S` (the source goes only
    /// after the final link), so the retry copies it again. A temporary with two links is left alone: it tells the
    /// retry that the final name exists (without it the retry would store the file a second time), and the retry
    /// removes it.
    package func removeLeftTemporaries() -> Int {
        var removed = 0
        var level = [output]
        for _ in 0..<max(1, path.segments.count) {
            var next: [String] = []
            for directory in level {
                guard let names = try? System.listDirectory(directory) else { continue }
                for name in names {
                    let entry = directory + "/" + name
                    if Self.isTemporaryName(name) {
                        if (try? Self.removeUnlocked(entry)) == true { removed += 1 }
                    } else if !name.hasPrefix("."), (try? System.lstat(entry))?.kind == .directory {
                        next.append(entry)
                    }
                }
            }
            level = next
        }
        return removed
    }

    static func isTemporaryName(_ name: String) -> Bool {
        guard name.hasPrefix(temporaryPrefix), name.hasSuffix(temporarySuffix) else { return false }
        let middle = name.dropFirst(temporaryPrefix.count).dropLast(temporarySuffix.count)
        return UUID(uuidString: String(middle)) != nil
    }

    private static func removeUnlocked(_ path: String) throws -> Bool {
        let file = try FileDescriptor.openForReading(path)
        let status = try file.status()
        guard status.kind == .regular, status.linkCount == 1, try file.lock(exclusive: true, nonBlocking: true) else {
            return false
        }
        try System.unlink(path)
        return true
    }

    /// The longest stored name, in UTF-8 bytes, leaving room below NAME_MAX for ` (n)`.
    static let maxNameBytes = 200

    /// A safe file name from a suggested one: no path separators or control characters, no leading dot or space,
    /// not empty, at most `maxNameBytes` bytes with the extension kept.
    static func sanitizedName(_ suggested: String?, fallback: String) -> String {
        let cleaned = String(String.UnicodeScalarView((suggested ?? "").unicodeScalars.map { scalar in
            scalar == "/" || scalar == "\\" || scalar.value < 0x20 || scalar.value == 0x7f ? "_" : scalar
        }))
        let leading = cleaned.drop { $0 == "." || $0.isWhitespace }
        let trimmed = String(leading.reversed().drop { $0.isWhitespace }.reversed())
        let name = trimmed.isEmpty ? fallback : trimmed
        let (stem, ext) = split(name)
        var cappedStem = ""
        for character in stem {
            if cappedStem.utf8.count + character.utf8.count + ext.utf8.count > maxNameBytes { break }
            cappedStem.append(character)
        }
        return cappedStem.isEmpty ? "attachment" + ext : cappedStem + ext
    }

    /// `name.ext`, `name (1).ext`, `name (2).ext` …
    static func candidates(_ name: String) -> some Sequence<String> {
        let (stem, ext) = split(name)
        return (0..<100_000).lazy.map { $0 == 0 ? name : "\(stem) (\($0))\(ext)" }
    }

    /// Splits off an extension of up to 16 bytes, dot included (`"a.tar.gz"` → `("a.tar", ".gz")`).
    private static func split(_ name: String) -> (stem: String, ext: String) {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return (name, "") }
        let ext = name[dot...]
        guard ext.utf8.count > 1, ext.utf8.count <= 16, !ext.contains(where: \.isWhitespace) else { return (name, "") }
        return (String(name[..<dot]), String(ext))
    }
}

extension String {
    /// The last path component.
    fileprivate var lastComponent: String {
        split(separator: "/").last.map(String.init) ?? self
    }
}
