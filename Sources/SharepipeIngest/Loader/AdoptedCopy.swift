import SharepipeSpool
import SharepipeSystem

/// A representation that a source of this process already received, whole, into a file in the spool's `staging`
/// (an HTTP body), hashed as its bytes arrived. The loader adopts the file as the share's copy (a second name in
/// `staging/S`) instead of copying it a second time: the bytes pass through the machine once.
struct ReceivedFile: Sendable, Equatable {
    /// The file, in a locked directory under `staging/`; nobody writes to it any more.
    var path: String
    /// Its size, counted as it was received.
    var bytes: Int64
    /// The SHA-256 of its bytes, computed as they were received.
    var sha256: String
}

/// A provider whose representations may be files it received itself into `staging` (see `ReceivedFile`).
///
/// An adopted copy is a second name of the received file, so that a fallback to another representation of the same
/// file still finds it; once every attachment is loaded the loader calls `adoptionsEnded()` and the received names
/// go, so a copy has one link when it is published (as every copy in `staging` has: the store processor relies on
/// it). A crash in between leaves both names in unpublished `staging` directories, which recovery removes.
protocol AdoptingProvider: ItemProvider {
    /// The received file holding the representation of `typeIdentifier`; nil when it must be loaded and copied as
    /// any provider's.
    func receivedFile(forTypeIdentifier typeIdentifier: String) -> ReceivedFile?
    /// The loader is done with the received files: their names outside the share are removed.
    func adoptionsEnded()
    /// Where the spares of the share's recycled directory that its adopted copies left unused go (the receive
    /// directory, for the next bodies); nil frees them.
    var spareSink: (any SpareSink)? { get }
}

extension CopyEngine {
    /// Makes `destination` (which must not exist) a second name of a received file, counting it against the
    /// limits as a copy of it would be; the digest is the one computed while it was received and the head (for the
    /// sniffer) is read back from the page cache. The copy is durable once the publisher's barrier has run, as any
    /// copy. A file system that refuses hard links gets a real copy instead.
    func adopt(_ file: ReceivedFile, to destination: String) throws -> Result {
        if share.cancelled.load(ordering: .relaxed) { throw ShareError(.cancelled, "the share was cancelled") }
        if file.bytes > maxFileSize { throw ShareError(.tooLarge, "attachment is over the \(maxFileSize)-byte limit") }
        let linked: Bool
        do {
            linked = try System.linkNoReplace(file.path, to: destination)
        } catch let error as ShareError
            where [Errno.notPermitted, Errno.notSupported, Errno.crossDevice, Errno.tooManyLinks].contains(error.errno)
        {
            return try copyFile(from: file.path, to: Destination(path: destination))
        }
        guard linked else { throw ShareError(.io, "the copy's name is taken", errno: Errno.exists) }
        do {
            if share.bytes.add(file.bytes, ordering: .relaxed).newValue > maxShareSize {
                throw ShareError(.shareTooLarge, "share is over the \(maxShareSize)-byte limit")
            }
            let input = try FileDescriptor.openForReading(destination)
            var head = [UInt8](repeating: 0, count: Int(min(Int64(Sniffer.sniffLength), file.bytes)))
            var filled = 0
            while filled < head.count {
                let read = try head.withUnsafeMutableBytes { raw in
                    try input.read(into: UnsafeMutableRawBufferPointer(rebasing: raw[filled...]), at: Int64(filled))
                }
                if read == 0 { throw ShareError(.io, "the received file shrank") }
                filled += read
            }
            progress?(file.bytes)
            return Result(bytes: file.bytes, sha256: file.sha256, head: head)
        } catch {
            try? System.unlink(destination)
            throw error
        }
    }

    /// `adopt`, with its failure as the loader reports it.
    func adopting(_ file: ReceivedFile, to destination: String) -> Swift.Result<Result, ShareError> {
        do {
            return .success(try adopt(file, to: destination))
        } catch let error as ShareError {
            return .failure(error)
        } catch {
            return .failure(ShareError(.io, "\(error)"))
        }
    }
}
