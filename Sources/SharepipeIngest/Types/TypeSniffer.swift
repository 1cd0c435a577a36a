import SharepipeSystem

/// Content sniffing for one file on disk, as `sharepipe types sniff` offers it.
package enum TypeSniffer {
    /// Sniffs a regular file's leading bytes with libmagic and maps the MIME type to a type identifier, the same way
    /// the loader does. A symlink is never followed, and FIFOs, sockets, devices and directories are refused with
    /// `ERR_NOT_REGULAR_FILE` without blocking; a missing file is `ERR_MISSING_FILE`.
    package static func sniff(path: String, registry: TypeRegistry = .standard) throws
        -> (mimeType: String, typeIdentifier: String)
    {
        let sniffed = try sniffHead(path: path)
        return (sniffed.mimeType, registry.sniffedType(forMIMEType: sniffed.mimeType, head: sniffed.head))
    }

    /// A file's leading bytes (up to `Sniffer.sniffLength`) and what libmagic says of them.
    struct SniffedHead: Sendable {
        var head: [UInt8]
        var mimeType: String
        /// The tests libmagic ran: `.builtin` for text declared as textual (see `TypeRegistry.sniffScope`).
        var scope: Magic.Scope = .full
    }

    /// Reads and sniffs a regular file's leading bytes, refusing what is not a regular file. `declaredType` is the
    /// type the content will be judged against, when known: it decides how much libmagic is asked.
    static func sniffHead(path: String, declaredType: String? = nil, registry: TypeRegistry = .standard) throws
        -> SniffedHead
    {
        let file = try open(path)
        guard try file.status().kind == .regular else {
            throw ShareError(.notRegularFile, "not a regular file")
        }
        return try sniffHead(descriptor: file, declaredType: declaredType, registry: registry)
    }

    /// Reads (at offset 0, leaving the file position alone) and sniffs the leading bytes of an open regular file.
    static func sniffHead(
        descriptor file: borrowing FileDescriptor, declaredType: String? = nil, registry: TypeRegistry = .standard
    ) throws -> SniffedHead {
        var buffer = [UInt8](repeating: 0, count: Sniffer.sniffLength)
        var count = 0
        while count < buffer.count {
            let read = try buffer.withUnsafeMutableBytes { (raw) throws in
                try file.read(into: UnsafeMutableRawBufferPointer(rebasing: raw[count...]), at: Int64(count))
            }
            if read == 0 { break }
            count += read
        }
        let head = Array(buffer[..<count])
        let scope = registry.sniffScope(declaredType: declaredType, head: head)
        return SniffedHead(head: head, mimeType: try Magic.shared.mimeType(of: head, scope: scope), scope: scope)
    }

    private static func open(_ path: String) throws -> FileDescriptor {
        do {
            return try FileDescriptor.openForReading(path)
        } catch let error as ShareError where error.errno == Errno.symlinkLoop {
            throw ShareError(.notRegularFile, "a symlink is not a regular file", errno: Errno.symlinkLoop)
        } catch let error as ShareError where error.errno == Errno.noEntry || error.errno == Errno.notDirectory {
            throw ShareError(.missingFile, "no such file", errno: error.errno)
        }
    }
}
