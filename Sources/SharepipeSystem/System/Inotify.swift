import CSharepipeShims
import Glibc

/// One event read from an inotify descriptor.
package struct InotifyEvent: Sendable, Equatable {
    /// The watch the event belongs to; -1 for a queue overflow.
    package var watch: Int32
    /// The `IN_*` bits (`InotifyMask`).
    var mask: UInt32
    /// Pairs an `IN_MOVED_FROM` with its `IN_MOVED_TO`.
    var cookie: UInt32
    /// The entry inside the watched directory, or nil when the event is about the directory itself.
    package var name: String?

    /// Whether any of the bits in `flags` is set.
    package func has(_ flags: InotifyMask) -> Bool {
        mask & flags.rawValue != 0
    }
}

/// The `IN_*` bits of a watch's mask and of the events it reports.
package struct InotifyMask: OptionSet, Sendable {
    package let rawValue: UInt32

    package init(rawValue: UInt32) {
        self.rawValue = rawValue
    }

    private init(_ flag: Int32) {
        rawValue = UInt32(bitPattern: flag)
    }

    package static let open = InotifyMask(IN_OPEN)
    package static let closeWrite = InotifyMask(IN_CLOSE_WRITE)
    package static let closeNoWrite = InotifyMask(IN_CLOSE_NOWRITE)
    package static let modify = InotifyMask(IN_MODIFY)
    package static let attributes = InotifyMask(IN_ATTRIB)
    package static let create = InotifyMask(IN_CREATE)
    package static let delete = InotifyMask(IN_DELETE)
    package static let movedFrom = InotifyMask(IN_MOVED_FROM)
    package static let movedTo = InotifyMask(IN_MOVED_TO)
    package static let deleteSelf = InotifyMask(IN_DELETE_SELF)
    package static let moveSelf = InotifyMask(IN_MOVE_SELF)
    package static let unmount = InotifyMask(IN_UNMOUNT)
    /// The watch is gone (its directory was deleted, or it was removed).
    package static let ignored = InotifyMask(IN_IGNORED)
    /// The event's subject is a directory.
    package static let isDirectory = InotifyMask(IN_ISDIR)
    /// Events were lost.
    package static let queueOverflow = InotifyMask(IN_Q_OVERFLOW)
    /// Watch only if the path is a directory.
    package static let onlyDirectory = InotifyMask(IN_ONLYDIR)
    /// Do not follow a symlink at the watched path.
    package static let dontFollow = InotifyMask(IN_DONT_FOLLOW)
}

/// One inotify instance. Its descriptor is non-blocking: reads never stall, `System.waitReadable` does the waiting.
package struct Inotify: ~Copyable {
    private let descriptor: FileDescriptor

    package init() throws {
        let raw = try System.call("inotify_init1") { sharepipe_inotify_init(1) }
        descriptor = FileDescriptor(rawValue: raw)
    }

    /// The descriptor to poll for readability.
    package var pollDescriptor: Int32 { descriptor.rawValue }

    /// Watches a directory; watching the same inode again returns the same watch and replaces its mask.
    package func addWatch(_ path: String, mask: InotifyMask) throws -> Int32 {
        let raw = descriptor.rawValue
        return try System.call("inotify_add_watch") { inotify_add_watch(raw, path, mask.rawValue) }
    }

    /// Stops a watch; one that the kernel already dropped (its directory is gone) is fine.
    package func removeWatch(_ watch: Int32) {
        _ = inotify_rm_watch(descriptor.rawValue, watch)
    }

    /// Reads what is queued now, at most `reads` buffers' worth; empty when nothing is queued.
    package func readAvailable(into buffer: inout [UInt8], reads: Int = 16) throws -> [InotifyEvent] {
        let raw = descriptor.rawValue
        var events: [InotifyEvent] = []
        for _ in 0..<reads {
            let count: Int
            do {
                count = try buffer.withUnsafeMutableBytes { bytes in
                    try System.call("read") { Glibc.read(raw, bytes.baseAddress, bytes.count) }
                }
            } catch let error as ShareError where error.errno == EAGAIN {
                break
            }
            buffer.withUnsafeBytes { bytes in
                let start = bytes.baseAddress?.assumingMemoryBound(to: CChar.self)
                var offset = 0
                var event = sharepipe_inotify_event()
                while sharepipe_inotify_next(start, count, &offset, &event) == 1 {
                    guard let name = event.name else {
                        events.append(InotifyEvent(watch: event.wd, mask: event.mask, cookie: event.cookie, name: nil))
                        continue
                    }
                    guard let valid = String(validatingCString: name) else {
                        // A name that is not UTF-8 can only be reached by a listing, which repairs it: ask for one.
                        events.append(InotifyEvent(
                            watch: event.wd, mask: InotifyMask.queueOverflow.rawValue, cookie: event.cookie, name: nil))
                        continue
                    }
                    events.append(InotifyEvent(watch: event.wd, mask: event.mask, cookie: event.cookie, name: valid))
                }
            }
        }
        return events
    }
}

/// A socket pair that one thread polls and any thread may signal. A signal stays set: once woken, always woken.
package final class WakeSignal: Sendable {
    private let reader: FileDescriptor
    private let writer: FileDescriptor

    package init() throws {
        var pair: [Int32] = [-1, -1]
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
        _ = try System.call("socketpair") { socketpair(AF_UNIX, type, 0, &pair) }
        reader = FileDescriptor(rawValue: pair[0])
        writer = FileDescriptor(rawValue: pair[1])
    }

    /// The descriptor to poll; it turns readable once `signal` has been called.
    package var pollDescriptor: Int32 { reader.rawValue }

    /// Wakes the poller; safe from any thread, any number of times.
    package func signal() {
        var byte: UInt8 = 1
        // A full socket buffer (EAGAIN) means the poller is already woken.
        _ = Glibc.send(writer.rawValue, &byte, 1, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
    }
}

extension System {
    /// Waits until a descriptor is readable (or hung up) or `timeout` nanoseconds pass; nil waits forever.
    /// Returns, per descriptor, whether it is ready.
    package static func waitReadable(_ descriptors: [Int32], timeout: UInt64?) throws -> [Bool] {
        var entries = descriptors.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        let milliseconds: Int32
        if let timeout {
            // Round up so that a wait never ends before its deadline.
            milliseconds = Int32(clamping: (timeout + 999_999) / 1_000_000)
        } else {
            milliseconds = -1
        }
        let count = nfds_t(entries.count)
        _ = try call("poll") { Glibc.poll(&entries, count, milliseconds) }
        return entries.map { $0.revents != 0 }
    }

    /// Whether `name` matches the shell glob `pattern` (fnmatch(3) without flags: `*` also matches a leading dot).
    package static func matchesGlob(_ name: String, pattern: String) -> Bool {
        fnmatch(pattern, name, 0) == 0
    }

    /// The absolute path with every symlink resolved (realpath(3)).
    package static func resolvedPath(_ path: String) throws -> String {
        guard let resolved = realpath(path, nil) else { throw error("realpath", errno: Glibc.errno) }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
