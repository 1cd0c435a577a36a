import SharepipeIngest
import SharepipeSpool
import SharepipeSystem

/// The outcome of one `sharepipe doctor` check.
package struct DiagnosticCheck: Sendable, Equatable {
    /// How a check came out.
    package enum Status: String, Sendable, Equatable {
        /// Nothing to do.
        case ok
        /// Works now, but worth a look; does not fail `doctor`.
        case warning = "warn"
        /// Will not work; `doctor` exits non-zero.
        case failure = "fail"
    }

    /// A short stable name: `libmagic`, `state-directory`, `same-filesystem`, `inbox`, `inotify`, `free-space`,
    /// `spool-limits`, `filesystem-state`, `filesystem-inbox`, `filesystem-output` ….
    package var name: String
    /// How it came out.
    package var status: Status
    /// What was found, in one line.
    package var detail: String
    /// What to do about a warning or a failure; nil when the check passed.
    package var hint: String?

    /// Whether the check passed (a warning passes).
    package var ok: Bool { status != .failure }

    /// A check result.
    package init(name: String, status: Status, detail: String, hint: String? = nil) {
        self.name = name
        self.status = status
        self.detail = detail
        self.hint = hint
    }
}

/// Self-diagnosis of the host for `sharepipe doctor`. Every check only looks: nothing is created or changed, except
/// for an empty probe file created and removed at once to prove a directory is writable.
package enum Diagnostics {
    /// Every host check, in the order `doctor` prints them; `limits` are the loader's, as the daemon would run;
    /// `output` is the store processor's output directory, when it stores.
    package static func run(state: String, inbox: String, output: String? = nil, limits: LoaderConfiguration = .init())
        -> [DiagnosticCheck]
    {
        let (sum, overflow) = limits.minFreeBytes.addingReportingOverflow(limits.maxFileSize)
        let locations = [("state", state), ("inbox", inbox)] + (output.map { [("output", $0)] } ?? [])
        return [
            libmagic(), stateDirectory(state), sameFileSystem(state), inboxDirectory(inbox), inotify(),
            freeSpace(state, minimum: limits.minFreeBytes, threshold: overflow ? .max : sum), spoolLimits(limits),
        ] + locations.map { fileSystem($0.0, $0.1) }
    }

    /// What the file system of a location honours (`filesystem-state`, `filesystem-inbox`, `filesystem-output`):
    /// its type, the barrier and claim methods sharepipe uses there, and its capacity (or "unknown"). A location
    /// that does not exist yet is probed where it would be created.
    static func fileSystem(_ location: String, _ path: String) -> DiagnosticCheck {
        let name = "filesystem-" + location
        do {
            var target = path
            if try System.lstatIfPresent(path) == nil { target = try nearestExistingAncestor(of: path).path }
            let capabilities = try FileSystemCapabilities.probe(target)
            var detail = capabilities.summary
            if !capabilities.capacityKnown { detail += " (--min-free is not applied there)" }
            return DiagnosticCheck(name: name, status: .ok, detail: detail)
        } catch let error as ShareError {
            return DiagnosticCheck(
                name: name, status: .failure, detail: "cannot probe \(path): \(error.message)",
                hint: "make \(path) (or the directory it will be created in) writable by the user sharepipe runs as")
        } catch {
            return DiagnosticCheck(name: name, status: .failure, detail: "\(error)")
        }
    }

    /// The back-pressure limits in force, so that an `ERR_SPOOL_FULL` can be traced to one of them.
    static func spoolLimits(_ limits: LoaderConfiguration) -> DiagnosticCheck {
        DiagnosticCheck(
            name: "spool-limits", status: .ok,
            detail: "--min-free \(System.describeBytes(limits.minFreeBytes)), "
                + "--max-pending-shares \(limits.maxPendingShares), "
                + "--max-pending-bytes \(System.describeBytes(limits.maxPendingBytes)), "
                + "--max-file-size \(System.describeBytes(limits.maxFileSize))")
    }

    /// The first bytes of a JPEG file (SOI and a JFIF APP0 segment), which libmagic must call image/jpeg.
    static let jpegProbe: [UInt8] = [
        0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, 0x4A, 0x46, 0x49, 0x46, 0x00, 0x01, 0x01, 0x00, 0x00, 0x01, 0x00, 0x01,
        0x00, 0x00,
    ] + [UInt8](repeating: 0, count: 32) + [0xFF, 0xD9]

    /// The magic database loads and sniffs a JPEG header as image/jpeg.
    static func libmagic(_ magic: Magic = .shared) -> DiagnosticCheck {
        let name = "libmagic"
        let hint = "install the magic database (Debian: libmagic1 and libmagic-mgc); unset MAGIC if it points elsewhere"
        do {
            let mimeType = try magic.mimeType(of: jpegProbe)
            guard mimeType == "image/jpeg" else {
                return DiagnosticCheck(
                    name: name, status: .failure, detail: "a JPEG header sniffs as \(mimeType), not image/jpeg",
                    hint: hint)
            }
            return DiagnosticCheck(
                name: name, status: .ok, detail: "database loads; a JPEG header sniffs as image/jpeg")
        } catch let error as ShareError {
            return DiagnosticCheck(name: name, status: .failure, detail: error.message, hint: hint)
        } catch {
            return DiagnosticCheck(name: name, status: .failure, detail: "\(error)", hint: hint)
        }
    }

    /// The state directory and its stage directories exist and take new files, or the directory can be created.
    static func stateDirectory(_ path: String) -> DiagnosticCheck {
        let name = "state-directory"
        func failure(_ detail: String, symlink: Bool = false) -> DiagnosticCheck {
            let hint = symlink
                ? "pass the directory the symlink points to as --state DIR"
                : "create \(path) writable by the user sharepipe runs as (systemd: StateDirectory=), "
                    + "or pass --state DIR"
            return DiagnosticCheck(
                name: name, status: .failure,
                detail: "\(ShareError.Code.containerUnavailable.rawValue): \(detail)", hint: hint)
        }
        do {
            guard let status = try System.lstatIfPresent(path) else {
                let (ancestor, kind) = try nearestExistingAncestor(of: path)
                guard kind == .directory else {
                    return failure("\(path) cannot be created: \(ancestor) \(describe(kind))")
                }
                do {
                    try System.probeWritable(ancestor)
                } catch let error as ShareError {
                    return failure("\(path) cannot be created in \(ancestor): \(error.message)")
                }
                return DiagnosticCheck(
                    name: name, status: .ok, detail: "\(path) does not exist yet and can be created in \(ancestor)")
            }
            guard status.kind == .directory else {
                return failure("\(path) \(describe(status.kind))", symlink: status.kind == .symlink)
            }
            try System.probeWritable(path)
            for stage in Spool.Stage.allCases {
                let stagePath = path + "/" + stage.rawValue
                guard let stageStatus = try System.lstatIfPresent(stagePath) else { continue }
                guard stageStatus.kind == .directory else {
                    return failure("\(stagePath) \(describe(stageStatus.kind))")
                }
                try System.probeWritable(stagePath)
            }
            return DiagnosticCheck(name: name, status: .ok, detail: "\(path) exists and is writable")
        } catch let error as ShareError {
            return failure("\(path) is not usable: \(error.message)")
        } catch {
            return failure("\(path) is not usable: \(error)")
        }
    }

    /// The four stage directories share one file system: publish, claim and quarantine are renames.
    static func sameFileSystem(_ state: String) -> DiagnosticCheck {
        let name = "same-filesystem"
        guard let root = try? System.lstatIfPresent(state) else {
            return DiagnosticCheck(
                name: name, status: .ok,
                detail: "the state directory does not exist yet; its stage directories will be created inside it")
        }
        guard root.kind == .directory else {
            return DiagnosticCheck(
                name: name, status: .ok, detail: "not checked: the state directory is not a directory")
        }
        var devices: [(Spool.Stage, UInt64)] = []
        for stage in Spool.Stage.allCases {
            let status = try? System.lstatIfPresent(state + "/" + stage.rawValue)
            devices.append((stage, status?.device ?? root.device))
        }
        let staging = devices[0].1
        guard devices.allSatisfy({ $0.1 == staging }) else {
            let list = devices.map { "\($0.0.rawValue) on \(deviceNumber($0.1))" }.joined(separator: ", ")
            return DiagnosticCheck(
                name: name, status: .failure,
                detail: "stage directories are on different file systems (\(list)); publishing a share is a rename",
                hint: "keep \(state) on one file system: mount nothing over its staging, incoming, processing or "
                    + "quarantine directories")
        }
        return DiagnosticCheck(
            name: name, status: .ok,
            detail: "staging, incoming, processing and quarantine are on one file system (\(deviceNumber(staging)))")
    }

    /// The inbox exists and may be read, written and searched, or can be created.
    static func inboxDirectory(_ path: String) -> DiagnosticCheck {
        let name = "inbox"
        let hint = "create \(path) readable and writable by the user sharepipe runs as, or pass --inbox DIR"
        func failure(_ detail: String) -> DiagnosticCheck {
            DiagnosticCheck(name: name, status: .failure, detail: detail, hint: hint)
        }
        do {
            guard let status = try System.lstatIfPresent(path) else {
                let (ancestor, kind) = try nearestExistingAncestor(of: path)
                guard kind == .directory else {
                    return failure("\(path) does not exist and cannot be created: \(ancestor) \(describe(kind))")
                }
                // access(2) says yes for root on /proc and read-only mounts; only creating a file proves it.
                do {
                    try System.probeWritable(ancestor)
                } catch let error as ShareError {
                    return failure("\(path) does not exist and cannot be created in \(ancestor): \(error.message)")
                }
                return DiagnosticCheck(
                    name: name, status: .ok, detail: "\(path) does not exist yet; the daemon creates it in \(ancestor)")
            }
            guard status.kind == .directory else { return failure("\(path) \(describe(status.kind))") }
            guard System.isReadableWritableDirectory(path) else {
                return failure("\(path) is not readable, writable and searchable by this user")
            }
            return DiagnosticCheck(name: name, status: .ok, detail: "\(path) exists and is readable and writable")
        } catch let error as ShareError {
            return failure("\(path) is not usable: \(error.message)")
        } catch {
            return failure("\(path) is not usable: \(error)")
        }
    }

    /// An inotify instance can be created; the limits in `/proc/sys/fs/inotify` (unknown, not a failure, when
    /// hidden, as under systemd's `ProcSubset=pid`) and the instances open in the processes this user can see.
    static func inotify(proc: String = "/proc") -> DiagnosticCheck {
        let name = "inotify"
        let inUse = visibleInotifyInstances(proc: proc)
        let watches = procNumber(proc + "/sys/fs/inotify/max_user_watches")
        let instances = procNumber(proc + "/sys/fs/inotify/max_user_instances")
        let limits: String
        if let watches, let instances {
            limits = "max_user_watches \(watches), max_user_instances \(instances)"
        } else {
            limits = "limits unknown (\(proc)/sys/fs/inotify is not visible, as under systemd's ProcSubset=pid)"
        }
        let detail = "\(limits); \(inUse) instance\(inUse == 1 ? "" : "s") open in processes visible to this user"
        do {
            _ = try Inotify()
        } catch let error as ShareError {
            return DiagnosticCheck(
                name: name, status: .failure, detail: "cannot create an inotify instance: \(error.message); \(detail)",
                hint: "raise fs.inotify.max_user_instances (sysctl), or run the daemon with --poll MS")
        } catch {
            return DiagnosticCheck(name: name, status: .failure, detail: "\(error)")
        }
        return DiagnosticCheck(name: name, status: .ok, detail: detail)
    }

    /// Free space on the state directory's file system (or where it would be created): under `minimum`
    /// (`--min-free`) new shares are refused with ERR_SPOOL_FULL (a failure); under `threshold` (`--min-free` plus
    /// the largest allowed file) a file the limits allow may not fit, a warning.
    static func freeSpace(_ state: String, minimum: Int64, threshold: Int64) -> DiagnosticCheck {
        let name = "free-space"
        let hint = "free space on the file system holding the state directory, or move it with --state DIR"
        do {
            var target = state
            if try System.lstatIfPresent(state) == nil { target = try nearestExistingAncestor(of: state).path }
            guard try FileSystemCapabilities.probe(target).capacityKnown else {
                return DiagnosticCheck(
                    name: name, status: .ok,
                    detail: "capacity unknown: the state directory's file system reports no size (statfs total 0), "
                        + "so --min-free is not applied; --max-pending-shares and --max-pending-bytes still are")
            }
            let free = try System.freeBytes(target)
            let detail = "\(System.describeBytes(free)) free on the state directory's file system"
            if free < minimum {
                return DiagnosticCheck(
                    name: name, status: .failure,
                    detail: detail
                        + "; new shares are refused with ERR_SPOOL_FULL below \(System.describeBytes(minimum))",
                    hint: hint + ", or lower --min-free")
            }
            if free < threshold {
                return DiagnosticCheck(
                    name: name, status: .warning,
                    detail: detail + ", less than --min-free plus --max-file-size (\(System.describeBytes(threshold)))",
                    hint: hint)
            }
            return DiagnosticCheck(name: name, status: .ok, detail: detail)
        } catch let error as ShareError {
            return DiagnosticCheck(name: name, status: .failure, detail: error.message, hint: hint)
        } catch {
            return DiagnosticCheck(name: name, status: .failure, detail: "\(error)", hint: hint)
        }
    }

    // MARK: - Helpers

    /// The closest ancestor of `path` that exists, and its kind; a symlink to a directory counts as a directory
    /// (the kernel follows it when creating below it).
    static func nearestExistingAncestor(of path: String) throws -> (path: String, kind: FileKind) {
        var current = path
        while true {
            let parent = parentPath(current)
            if let status = try System.lstatIfPresent(parent) {
                guard status.kind == .symlink else { return (parent, status.kind) }
                let target = try System.lstatIfPresent(parent + "/.")
                return (parent, target?.kind == .directory ? .directory : .symlink)
            }
            guard parent != current else { return (parent, .unknown) }
            current = parent
        }
    }

    /// The directory part of a path: `a/b` → `a`, `b` → `.`, `/b` → `/`.
    static func parentPath(_ path: String) -> String {
        var trimmed = Substring(path)
        while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        guard let slash = trimmed.lastIndex(of: "/") else { return "." }
        return slash == trimmed.startIndex ? "/" : String(trimmed[..<slash])
    }

    private static func describe(_ kind: FileKind) -> String {
        switch kind {
        case .directory: "is a directory"
        case .symlink: "is a symlink, which sharepipe does not follow"
        case .regular: "is a regular file, not a directory"
        default: "is not a directory"
        }
    }

    /// `major:minor`, as `lsblk` and `/proc/self/mountinfo` show a device.
    private static func deviceNumber(_ device: UInt64) -> String {
        let major = ((device >> 8) & 0xfff) | ((device >> 32) & ~UInt64(0xfff))
        let minor = (device & 0xff) | ((device >> 12) & ~UInt64(0xff))
        return "device \(major):\(minor)"
    }

    /// A decimal number in a `/proc` file, or nil when it cannot be read.
    private static func procNumber(_ path: String) -> Int? {
        guard let bytes = try? System.readFile(path, limit: 64) else { return nil }
        return Int(String(decoding: bytes, as: UTF8.self).trimmingWhitespace)
    }

    /// inotify descriptors in every `/proc/PID/fd` this process may read.
    private static func visibleInotifyInstances(proc: String) -> Int {
        guard let entries = try? System.listDirectory(proc) else { return 0 }
        var count = 0
        for pid in entries where !pid.isEmpty && pid.utf8.allSatisfy({ (0x30...0x39).contains($0) }) {
            let directory = proc + "/" + pid + "/fd"
            guard let descriptors = try? System.listDirectory(directory) else { continue }
            count += descriptors.filter { descriptor in
                (try? System.readLink(directory + "/" + descriptor)) == "anon_inode:inotify"
            }.count
        }
        return count
    }
}

extension String {
    /// Without leading and trailing spaces, tabs and newlines.
    fileprivate var trimmingWhitespace: String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        return String(drop(while: isSpace).reversed().drop(while: isSpace).reversed())
    }
}
