import Foundation
import Glibc

/// Turns ready inbox entries into shares: a file into a one-attachment share, a folder (flattened) into one
/// multi-attachment share. A source is deleted only after its share was published; what cannot be ingested goes
/// to `INBOX/.rejected/` with a `<name>.reason.json`; what cannot be ingested *now* (spool full, I/O) stays.
struct InboxIngester: Sendable {
    /// What became of one inbox entry.
    enum Outcome: Sendable, Equatable {
        /// Published; sources removed.
        case published(shareID: String, status: ShareReceipt.Status)
        /// Moved to `.rejected`.
        case rejected(ShareError.Code)
        /// Left in place to try again later (spool full, I/O, cancelled).
        case deferred(ShareError.Code)
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
    let activation: (@Sendable ([[String]]) -> (activated: Bool, reason: String))?

    func ingest(_ candidate: InboxCandidate) async -> Outcome {
        let path = inbox + "/" + candidate.name
        guard let status = try? System.lstatIfPresent(path) else { return .vanished }
        let started = System.monotonicNanoseconds()
        let outcome: Outcome
        switch status.kind {
        case .regular:
            outcome = await ingest(files: [(path, status)], entry: candidate.name, isFolder: false)
        case .directory:
            outcome = await ingestFolder(path, entry: candidate.name)
        default:
            let error = ShareError(.notRegularFile, "the inbox entry is a \(status.kind), not a regular file")
            outcome = reject(candidate.name, error, declaredTypes: [], sniffedMimeType: nil)
        }
        log(outcome, entry: candidate.name, milliseconds: Int64((System.monotonicNanoseconds() - started) / 1_000_000))
        return outcome
    }

    private func log(_ outcome: Outcome, entry: String, milliseconds: Int64) {
        switch outcome {
        case .published(let shareID, let status):
            logger.info("inbox.published", [
                ("share", .string(shareID)), ("status", .string(status.rawValue)), ("name", logger.name(entry)),
                ("duration_ms", .int(milliseconds)),
            ])
        case .rejected(let code):
            logger.warning("inbox.rejected", [("code", .string(code.rawValue)), ("name", logger.name(entry))])
        case .deferred(let code):
            logger.warning("inbox.deferred", [("code", .string(code.rawValue)), ("name", logger.name(entry))])
        case .vanished:
            logger.debug("inbox.vanished", [("name", logger.name(entry))])
        case .leftInPlace:
            logger.debug("inbox.left_in_place", [("name", logger.name(entry))])
        }
    }

    /// Every regular file and every hostile entry under a folder, flattened, in a stable order; ignored names
    /// are skipped and left alone.
    private func ingestFolder(_ path: String, entry: String) async -> Outcome {
        var files: [(String, FileStatus)] = []
        var pending = [path]
        while let directory = pending.popLast() {
            guard let names = try? System.listDirectory(directory, repairingNames: true) else { continue }
            for name in names.sorted() where !ignore.ignores(name) {
                let child = directory + "/" + name
                guard let status = try? System.lstatIfPresent(child) else { continue }
                if status.kind == .directory {
                    pending.append(child)
                } else {
                    files.append((child, status))
                }
            }
        }
        guard !files.isEmpty else {
            // An empty folder (or one holding only ignored names) has nothing to share; leave it alone.
            return .leftInPlace
        }
        return await ingest(files: files, entry: entry, isFolder: true)
    }

    private func ingest(files: [(path: String, status: FileStatus)], entry: String, isFolder: Bool) async -> Outcome {
        let providers = files.map { FileItemProvider(path: $0.path, registry: loader.registry) }
        if let activation {
            let decision = activation(providers.map(\.registeredTypeIdentifiers))
            if !decision.activated {
                let error = ShareError(.notActivated, "the activation rule refused the share: \(decision.reason)")
                let declared = providers.first?.registeredTypeIdentifiers ?? []
                return reject(entry, error, declaredTypes: declared, sniffedMimeType: nil)
            }
        }
        let sources = files.map {
            SourceIdentity(
                device: $0.status.device, inode: $0.status.inode, size: $0.status.size,
                modificationTime: $0.status.modificationTime) as SourceIdentity?
        }
        let receipt = await loader.load(providers, sourceApp: nil, sources: sources)
        switch receipt.status {
        case .complete, .partial:
            metrics.shareIngested(bytes: receipt.attachments.reduce(0) { $0 + ($1.bytes ?? 0) })
            for (record, file) in zip(receipt.attachments, files) where record.status == .copied {
                removeSource(file.path, expected: file.status)
            }
            if isFolder && receipt.status == .complete {
                removeEmptyDirectories(inbox + "/" + entry)
            }
            try? System.syncDirectory(inbox)
            try? loader.spool.ledger.markSourcesDone(shareID: receipt.shareId)
            if receipt.status == .partial {
                let failure = receipt.attachments.first { $0.status == .failed }
                let error = failure?.shareError ?? ShareError(.io, "some attachments failed")
                _ = reject(
                    entry, error, declaredTypes: failure?.declaredTypes ?? [],
                    sniffedMimeType: failure?.sniffedMimeType)
            }
            return .published(shareID: receipt.shareId, status: receipt.status)
        case .rejected:
            let failure = receipt.attachments.first { $0.status == .failed }
            let error = receipt.error.map { ShareError($0.code, $0.message) } ?? failure?.shareError
                ?? ShareError(.io, "the share was rejected")
            switch error.code {
            case .cancelled, .spoolFull, .containerUnavailable:
                return .deferred(error.code)
            case .missingFile where (try? System.lstatIfPresent(inbox + "/" + entry)) == nil:
                return .vanished
            default:
                return reject(
                    entry, error, declaredTypes: failure?.declaredTypes ?? [],
                    sniffedMimeType: failure?.sniffedMimeType)
            }
        case .failed:
            return .deferred(receipt.error?.code ?? .io)
        }
    }

    /// Unlinks a published source, unless something else has taken its name since.
    private func removeSource(_ path: String, expected: FileStatus) {
        guard let now = try? System.lstatIfPresent(path), now.device == expected.device, now.inode == expected.inode
        else { return }
        do {
            try System.unlink(path)
        } catch {
            logger.error("inbox.unlink_failed", [
                ("code", .string(ShareError.Code.io.rawValue)),
                ("errno", .int(Int64((error as? ShareError)?.errno ?? 0))),
            ])
        }
    }

    /// Removes the directories of a published folder bottom-up; a directory still holding something stays.
    private func removeEmptyDirectories(_ path: String) {
        guard let names = try? System.listDirectory(path) else { return }
        for name in names {
            let child = path + "/" + name
            if (try? System.lstat(child))?.kind == .directory { removeEmptyDirectories(child) }
        }
        try? System.removeDirectory(path)
    }

    /// Moves an inbox entry to `.rejected/` under a collision-free name, then writes its reason beside it.
    func reject(_ entry: String, _ error: ShareError, declaredTypes: [String], sniffedMimeType: String?) -> Outcome {
        let directory = inbox + "/" + Self.rejectedDirectory
        do {
            try System.makeDirectory(directory, mode: 0o750)
            let finalName = try Self.moveCollisionFree(inbox + "/" + entry, into: directory, name: entry)
            metrics.sourceRejected(code: error.code)
            var reason: [String: Any] = [
                "code": error.code.rawValue, "message": error.message, "declaredTypes": declaredTypes,
                "time": Date().rfc3339,
            ]
            reason["sniffedMimeType"] = sniffedMimeType ?? NSNull()
            let bytes = try JSONSerialization.data(withJSONObject: reason, options: [.sortedKeys, .prettyPrinted])
            try System.writeAtomically(Array(bytes), to: directory, name: finalName + ".reason.json", mode: 0o640)
            return .rejected(error.code)
        } catch let failure as ShareError where failure.errno == ENOENT {
            return .vanished
        } catch {
            let failure = error as? ShareError ?? ShareError(.io, "\(error)")
            logger.error("inbox.reject_failed", [
                ("code", .string(failure.code.rawValue)), ("message", .string(failure.message)),
            ])
            return .deferred(.io)
        }
    }

    /// `name`, `name (1)`, `name (2)` … keeping the extension; never replaces; fits NAME_MAX with room for the
    /// `.reason.json` suffix.
    static func moveCollisionFree(_ source: String, into directory: String, name: String) throws -> String {
        let limit = 255 - ".reason.json".utf8.count
        let ext = (name as NSString).pathExtension
        let stem = ext.isEmpty ? name : String(name.dropLast(ext.count + 1))
        for attempt in 0..<10_000 {
            let suffix = attempt == 0 ? "" : " (\(attempt))"
            let tail = suffix + (ext.isEmpty ? "" : "." + ext)
            var base = stem
            while base.utf8.count + tail.utf8.count > limit && !base.isEmpty { base.removeLast() }
            let candidate = base + tail
            if try System.renameNoReplace(source, to: directory + "/" + candidate) { return candidate }
        }
        throw ShareError(.io, "no free name in .rejected", errno: EEXIST)
    }
}
