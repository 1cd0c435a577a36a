import Foundation
import SharepipeLedger
import SharepipeSpool
import SharepipeSystem

/// Turns ready inbox entries into shares: a file into a one-attachment share, a folder (flattened) into one
/// multi-attachment share. Each file is opened once (`O_NOFOLLOW|O_NONBLOCK`), locked with a non-blocking exclusive
/// `flock` (held by another daemon on the same inbox: skipped, looked at again later), judged by `fstat` of that
/// descriptor, sniffed and copied from it; the publisher unlinks it only once its share is published, and only if
/// its name still names the same inode. Folders are walked with directory descriptors, so depth and path length do
/// not matter. What cannot be ingested goes to `INBOX/.rejected/` with a `<name>.reason.json`; what cannot be
/// ingested *now* (spool full, I/O, a writer still at it) stays.
package struct InboxIngester: Sendable {
    /// What became of one inbox entry.
    package enum Outcome: Sendable, Equatable {
        /// Published; sources removed.
        case published(shareID: String, status: ShareReceipt.Status)
        /// Moved to `.rejected`.
        case rejected(ShareError.Code)
        /// Left in place to try again later (spool full, I/O, cancelled, still being written), with why, for the
        /// log: an error message, which names no file.
        case deferred(ShareError.Code, reason: String)
        /// Locked by another daemon on the same inbox: it is that daemon's.
        case busy
        /// Gone before it could be picked up.
        case vanished
        /// Nothing to share (an empty folder); left alone until it changes.
        case leftInPlace
    }

    static let rejectedDirectory = ".rejected"

    let inbox: String
    let loader: ShareLoader
    let ignore: IgnoreRules
    let logger: Logger
    let metrics: Metrics
    /// Decides whether a share with these declared types (one list per attachment) activates the extension.
    let activation: ShareActivation?

    /// Ingests one inbox entry. `arrival`, from `Spool.expectPublish` when the entry's work was queued, ends when
    /// its share joins a publish batch (or when the entry turns out to publish nothing).
    package func ingest(_ candidate: InboxCandidate, arrival: LaneArrival? = nil) async -> Outcome {
        let started = System.monotonicNanoseconds()
        var published: (attachments: Int, types: [String], bytes: Int64)?
        let outcome: Outcome
        // Opened per entry rather than kept open: an open descriptor would hold back the inotify event that tells
        // the watcher the inbox itself was deleted.
        guard let directory = try? InboxDirectory.open(inbox) else { return .vanished }
        switch Self.open(candidate.name, in: directory) {
        case .file(let source):
            if let shareID = alreadyPublished(source) {
                logger.info("inbox.already_published", [
                    ("share", .string(shareID)), ("name", logger.name(candidate.name)),
                ])
                outcome = .vanished
            } else {
                let provider = InboxFileProvider(source: source, registry: loader.registry)
                (outcome, published) = await ingest(
                    [provider], entry: candidate.name, in: directory, folders: [], details: .empty, description: nil,
                    arrival: arrival)
            }
        case .folder(let folder):
            var providers: [InboxFileProvider] = []
            var folders: [InboxDirectory] = []
            var tags: [String] = []
            let description = Self.readShareJSON(in: folder)
            let walked = walk(folder, path: [candidate.name], into: &providers, folders: &folders, tags: &tags)
            switch (walked, description) {
            case (.busy, _), (_, .busy):
                outcome = .busy
            case (.complete, _) where providers.isEmpty:
                // An empty folder (or one holding only ignored names, or only a share.json) has nothing to share;
                // leave it alone.
                outcome = .leftInPlace
            case (.complete, .refused(let error)):
                outcome = reject(candidate.name, error, declaredTypes: [], sniffedMimeType: nil)
            case (.complete, .found(let details, let source)):
                do {
                    let details = try details.adding(tags: tags)
                    (outcome, published) = await ingest(
                        providers, entry: candidate.name, in: directory, folders: folders, details: details,
                        description: source, arrival: arrival)
                } catch {
                    outcome = reject(candidate.name, error, declaredTypes: [], sniffedMimeType: nil)
                }
            }
        case .busy:
            outcome = .busy
        case .vanished:
            outcome = .vanished
        case .refused(let error):
            outcome = reject(candidate.name, error, declaredTypes: [], sniffedMimeType: nil)
        }
        log(outcome, entry: candidate.name, published: published,
            milliseconds: Int64((System.monotonicNanoseconds() - started) / 1_000_000))
        return outcome
    }

    private func log(
        _ outcome: Outcome, entry: String, published: (attachments: Int, types: [String], bytes: Int64)?,
        milliseconds: Int64
    ) {
        switch outcome {
        case .published(let shareID, let status):
            logger.info("inbox.published", [
                ("share", .string(shareID)), ("status", .string(status.rawValue)), ("name", logger.name(entry)),
                ("attachments", .int(Int64(published?.attachments ?? 0))),
                ("types", .string(published?.types.joined(separator: ",") ?? "")),
                ("bytes", .int(published?.bytes ?? 0)), ("duration_ms", .int(milliseconds)),
            ])
        case .rejected(let code):
            logger.warning("inbox.rejected", [("code", .string(code.rawValue)), ("name", logger.name(entry))])
        case .deferred(let code, let reason):
            logger.warning("inbox.deferred", [
                ("code", .string(code.rawValue)), ("reason", .string(reason)), ("name", logger.name(entry)),
            ])
        case .busy:
            logger.debug("inbox.busy", [("name", logger.name(entry))])
        case .vanished:
            logger.debug("inbox.vanished", [("name", logger.name(entry))])
        case .leftInPlace:
            logger.info("inbox.left_in_place", [("reason", .string("empty folder")), ("name", logger.name(entry))])
        }
    }

    /// An inbox entry, opened.
    enum Opened {
        case file(InboxSource)
        case folder(InboxDirectory)
        /// Another holder has the file's lock.
        case busy
        case vanished
        /// Not something that can be shared (symlink, FIFO, socket, device) or not readable.
        case refused(ShareError)
    }

    /// Opens `name` in `directory` once, without following a symlink and without blocking on a FIFO; a regular file
    /// is locked without waiting and judged by `fstat` of the open descriptor.
    static func open(_ name: String, in directory: InboxDirectory) -> Opened {
        let descriptor: FileDescriptor
        do {
            descriptor = try directory.directory.openForReading(name)
        } catch let error as ShareError {
            switch error.errno {
            case Errno.noEntry, Errno.notDirectory: return .vanished
            case Errno.symlinkLoop:
                return .refused(ShareError(.notRegularFile, "the inbox entry is a symlink", errno: Errno.symlinkLoop))
            case Errno.noDevice:
                return .refused(ShareError(.notRegularFile, "the inbox entry is a socket", errno: Errno.noDevice))
            default: return .refused(error)
            }
        } catch {
            return .refused(ShareError(.io, "\(error)"))
        }
        do {
            let status = try descriptor.status()
            switch status.kind {
            case .directory:
                let folder = OpenDirectory(descriptor)
                return .folder(InboxDirectory(directory: folder, status: status, parent: directory, name: name))
            case .regular:
                guard try descriptor.lock(exclusive: true, nonBlocking: true) else { return .busy }
                // The holder before us may have published and unlinked it between our open and our lock.
                let locked = try descriptor.status()
                guard locked.linkCount > 0 else { return .vanished }
                return .file(InboxSource(directory: directory, name: name, descriptor: descriptor, status: locked))
            default:
                return .refused(ShareError(.notRegularFile, "the inbox entry is a \(status.kind), not a regular file"))
            }
        } catch {
            return .refused(error as? ShareError ?? ShareError(.io, "\(error)"))
        }
    }

    /// A file whose share another daemon (or this one, before a crash) published but did not get to unlink: it is
    /// unlinked now instead of being ingested again, and its record marked done.
    private func alreadyPublished(_ source: InboxSource) -> String? {
        guard let shareID = try? InboxRecovery(spool: loader.spool).publishedShare(of: source),
            (try? source.unlinkIfSame()) == true
        else { return nil }
        try? source.directory.directory.sync()
        loader.spool.sourcesRemoved(of: [shareID])
        return shareID
    }

    private enum Walk { case complete, busy }

    /// The name of a dropped folder's description of its share (title, text, userInfo, tags): read, checked, and
    /// removed with the folder, never an attachment.
    static let shareJSONName = "share.json"
    /// The largest share.json read: the four parts at their limits, with room for JSON escapes.
    static let maxShareJSONBytes = 1 << 20

    /// A share.json, open and locked, and the SHA-256 of what was read (recorded, like a copied file's, so that
    /// recovery removes it after a crash).
    struct ShareJSONFile: Sendable {
        var source: InboxSource
        var sha256: String
    }

    /// What a dropped folder's share.json gave.
    enum ShareDescription {
        /// The folder's details (empty without a share.json) and the file, locked, with its SHA-256, to remove with
        /// the folder.
        case found(ShareDetails, ShareJSONFile?)
        /// Locked by another daemon.
        case busy
        /// Not a regular file, not JSON, not an object of the known keys, or over a limit: the folder is rejected.
        case refused(ShareError)
    }

    /// Reads and checks `share.json` at the top of a dropped folder: a JSON object with only `title`, `text`,
    /// `userInfo` and `tags`.
    static func readShareJSON(in folder: InboxDirectory) -> ShareDescription {
        let source: InboxSource
        switch open(shareJSONName, in: folder) {
        case .vanished: return .found(.empty, nil)
        case .busy: return .busy
        case .folder: return .refused(ShareError(.notRegularFile, "share.json is a directory, not a regular file"))
        case .refused(let error): return .refused(ShareError(error.code, "share.json: \(error.message)"))
        case .file(let opened): source = opened
        }
        guard source.status.size <= maxShareJSONBytes else {
            return .refused(ShareError(
                .tooLarge, "share.json is \(source.status.size) bytes, at most \(maxShareJSONBytes)"))
        }
        var bytes = [UInt8](repeating: 0, count: Int(source.status.size))
        do {
            var filled = 0
            while filled < bytes.count {
                let count = try bytes.withUnsafeMutableBytes { buffer in
                    try source.descriptor.read(
                        into: UnsafeMutableRawBufferPointer(rebasing: buffer[filled...]), at: Int64(filled))
                }
                guard count > 0 else { break }
                filled += count
            }
            bytes.removeSubrange(filled...)
        } catch {
            return .refused(error as? ShareError ?? ShareError(.io, "share.json: \(error)"))
        }
        guard let value = JSONValue.parse(bytes) else {
            return .refused(ShareError(.badRequest, "share.json is not valid JSON"))
        }
        guard case .object(let members) = value else {
            return .refused(ShareError(.badRequest, "share.json must be a JSON object, got \(value.kind)"))
        }
        if let unknown = members.keys.sorted().first(where: { !ShareDetails.keys.contains($0) }) {
            return .refused(ShareError(.badRequest, "share.json: unknown key \(unknown.debugDescription) "
                + "(expected one of: \(ShareDetails.keys.joined(separator: ", ")))"))
        }
        do {
            let file = ShareJSONFile(source: source, sha256: SHA256.hash(bytes))
            return .found(try ShareDetails(members: members, what: "share.json"), file)
        } catch {
            return .refused(error)
        }
    }

    /// A folder name as a tag: commas and control characters become `_`, at most 255 bytes.
    static func tag(fromFolder name: String) -> String {
        var tag = ""
        for scalar in name.unicodeScalars {
            let replaced: Unicode.Scalar = scalar == "," || scalar.properties.generalCategory == .control ? "_" : scalar
            if tag.utf8.count + String(replaced).utf8.count > ShareDetails.maxTagBytes { break }
            tag.unicodeScalars.append(replaced)
        }
        return tag
    }

    /// Every regular file (and every hostile entry, which fails as an attachment) under a folder, files before
    /// subfolders, each level sorted by name; ignored names and the top level's share.json are skipped and left
    /// alone. `folders` receives the directories deepest first; `tags` the names of the folders from the dropped one
    /// down that hold a file of the share (`path`, below the inbox), each once. Stops past the attachment limit: the
    /// loader refuses such a share whole.
    private func walk(
        _ folder: InboxDirectory, path: [String], into providers: inout [InboxFileProvider],
        folders: inout [InboxDirectory], tags: inout [String]
    ) -> Walk {
        let names = (try? folder.directory.names(repairingNames: true)) ?? []
        var subfolders: [InboxDirectory] = []
        let before = providers.count
        for name in names.sorted() where !ignore.ignores(name) && !(path.count == 1 && name == Self.shareJSONName) {
            if providers.count > loader.configuration.maxAttachments { break }
            switch Self.open(name, in: folder) {
            case .file(let source):
                providers.append(InboxFileProvider(source: source, registry: loader.registry))
            case .folder(let child):
                subfolders.append(child)
            case .busy:
                return .busy
            case .vanished:
                continue
            case .refused(let error):
                providers.append(InboxFileProvider(name: name, failure: error, registry: loader.registry))
            }
        }
        if providers.count > before {
            for tag in path.map(Self.tag(fromFolder:)) where !tag.isEmpty && !tags.contains(tag) { tags.append(tag) }
        }
        for child in subfolders
        where walk(child, path: path + [child.name], into: &providers, folders: &folders, tags: &tags) == .busy {
            return .busy
        }
        folders.append(folder)
        return .complete
    }

    /// `description`: a folder's share.json, removed with the folder when the share is complete.
    private func ingest(
        _ providers: [InboxFileProvider], entry: String, in directory: InboxDirectory, folders: [InboxDirectory],
        details: ShareDetails, description: ShareJSONFile?, arrival: LaneArrival?
    ) async -> (Outcome, (attachments: Int, types: [String], bytes: Int64)?) {
        if let error = activationRefusal(activation, declaredBy: providers) {
            let declared = providers.first?.registeredTypeIdentifiers ?? []
            return (reject(entry, error, declaredTypes: declared, sniffedMimeType: nil), nil)
        }
        let origin = ShareOrigin(folder: folders.isEmpty ? nil : entry) { copied, complete in
            var identities: [SourceIdentity] = []
            var files: [InboxSource] = []
            for (index, sha256) in copied {
                guard let source = providers[index].source else { continue }
                var identity = SourceIdentity(source.status)
                identity.sha256 = sha256
                identities.append(identity)
                files.append(source)
            }
            // A complete folder share takes its folders along (and its share.json); they are recorded like its
            // files, so that recovery can remove a folder a crash left empty.
            let removed = complete ? folders : []
            if complete, let description {
                var identity = SourceIdentity(description.source.status)
                identity.sha256 = description.sha256
                identities.append(identity)
                files.append(description.source)
            }
            identities += removed.map { SourceIdentity.folder(device: $0.identity.device, inode: $0.identity.inode) }
            guard !identities.isEmpty else { return nil }
            return (identities, InboxShareSources(files: files, folders: removed))
        }
        let receipt = await loader.load(providers, sourceApp: nil, details: details, origin: origin, arrival: arrival)
        switch receipt.status {
        case .complete, .partial:
            let copied = receipt.attachments.filter { $0.status == .copied }
            let bytes = copied.reduce(0) { $0 + ($1.bytes ?? 0) }
            metrics.shareIngested(bytes: bytes)
            if receipt.status == .partial {
                let failure = receipt.attachments.first { $0.status == .failed }
                let error = failure?.shareError ?? ShareError(.io, "some attachments failed")
                _ = reject(
                    entry, error, declaredTypes: failure?.declaredTypes ?? [],
                    sniffedMimeType: failure?.sniffedMimeType, duplicateOf: failure?.duplicateOf)
            }
            let types = Array(Set(copied.compactMap(\.typeIdentifier))).sorted()
            return (.published(shareID: receipt.shareId, status: receipt.status), (copied.count, types, bytes))
        case .rejected:
            if providers.contains(where: { $0.source?.changedSinceOpened() ?? false }) {
                return (.deferred(.io, reason: "a source changed while it was copied"), nil)
            }
            let failure = receipt.attachments.first { $0.status == .failed }
            let error = receipt.error.map { ShareError($0.code, $0.message) } ?? failure?.shareError
                ?? ShareError(.io, "the share was rejected")
            switch error.code {
            case .cancelled, .spoolFull, .containerUnavailable:
                return (.deferred(error.code, reason: error.message), nil)
            case .missingFile where (try? directory.directory.statusIfPresent(entry)) == nil:
                return (.vanished, nil)
            default:
                return (reject(
                    entry, error, declaredTypes: failure?.declaredTypes ?? [],
                    sniffedMimeType: failure?.sniffedMimeType, duplicateOf: failure?.duplicateOf), nil)
            }
        case .failed:
            return (.deferred(receipt.error?.code ?? .io, reason: receipt.error?.message ?? "the share failed"), nil)
        }
    }

    /// Moves an inbox entry to `.rejected/` under a collision-free name, then writes its reason beside it.
    func reject(
        _ entry: String, _ error: ShareError, declaredTypes: [String], sniffedMimeType: String?,
        duplicateOf: DuplicateOrigin? = nil
    ) -> Outcome {
        let directory = inbox + "/" + Self.rejectedDirectory
        do {
            try System.makeDirectory(directory, mode: 0o750)
            let finalName = try Self.moveCollisionFree(
                inbox + "/" + entry, into: directory, name: entry,
                capabilities: try FileSystemCapabilities.probeOnce(inbox))
            metrics.sourceRejected(code: error.code)
            var reason: [String: Any] = [
                "code": error.code.rawValue, "message": error.message, "declaredTypes": declaredTypes,
                "time": Date().rfc3339,
            ]
            reason["sniffedMimeType"] = sniffedMimeType ?? NSNull()
            if let duplicateOf {
                reason["duplicateOf"] = [
                    "shareId": duplicateOf.shareId, "fileId": duplicateOf.fileId, "createdAt": duplicateOf.createdAt,
                ]
            }
            let bytes = try JSONSerialization.data(withJSONObject: reason, options: [.sortedKeys, .prettyPrinted])
            try System.writeAtomically(Array(bytes), to: directory, name: finalName + ".reason.json", mode: 0o640)
            return .rejected(error.code)
        } catch let failure as ShareError where failure.errno == Errno.noEntry {
            return .vanished
        } catch {
            let failure = error as? ShareError ?? ShareError(.io, "\(error)")
            logger.error("inbox.reject_failed", [
                ("code", .string(failure.code.rawValue)), ("message", .string(failure.message)),
            ])
            return .deferred(.io, reason: "the move to \(Self.rejectedDirectory) failed: \(failure.message)")
        }
    }

    /// `name`, `name (1)`, `name (2)` … keeping the extension; never replaces; fits NAME_MAX with room for the
    /// `.reason.json` suffix.
    static func moveCollisionFree(
        _ source: String, into directory: String, name: String, capabilities: FileSystemCapabilities
    ) throws -> String {
        let limit = 255 - ".reason.json".utf8.count
        let ext = (name as NSString).pathExtension
        let stem = ext.isEmpty ? name : String(name.dropLast(ext.count + 1))
        for attempt in 0..<10_000 {
            let suffix = attempt == 0 ? "" : " (\(attempt))"
            let tail = suffix + (ext.isEmpty ? "" : "." + ext)
            var base = stem
            while base.utf8.count + tail.utf8.count > limit && !base.isEmpty { base.removeLast() }
            let candidate = base + tail
            if try ExclusiveMove.inboxEntry(source, to: directory + "/" + candidate, capabilities: capabilities) {
                return candidate
            }
        }
        throw ShareError(.io, "no free name in .rejected", errno: Errno.exists)
    }

    package init(
        inbox: String, loader: ShareLoader, ignore: IgnoreRules, logger: Logger, metrics: Metrics,
        activation: ShareActivation? = nil
    ) {
        self.inbox = inbox
        self.loader = loader
        self.ignore = ignore
        self.logger = logger
        self.metrics = metrics
        self.activation = activation
    }
}
