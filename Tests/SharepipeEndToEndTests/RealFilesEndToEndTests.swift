import Foundation
import Glibc
import Testing

/// Files nobody here made: what Debian installs on the test machine, dropped into an inbox and ingested the way a
/// user's drops are. Names that tell the truth are taken, with a registered type wherever libmagic or the name
/// knows one; every lie is still refused. Also the other ways real writers and operators go wrong: hard links into
/// the inbox, a one-byte note, a URL as text, a tiny state file system, an unknown share id.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct RealFilesEndToEndTests {
    /// The extensions of issue 11's samples, and the everyday formats around them.
    static let extensions = [
        "html", "xhtml", "xml", "svg", "svgz", "png", "gif", "jpg", "json", "css", "js", "py", "sh", "pem", "crt",
        "ps", "eps", "gz", "jar", "xbm", "xpm", "md", "rst", "h", "c", "ttf", "otf", "pfa", "pfb", "mo", "po", "txt",
        "yaml", "yml", "toml", "conf", "cfg", "ini", "sql", "pom", "icc", "icm",
    ]
    static let perExtension = 30
    static let roots = ["/usr/share", "/usr/include", "/etc", "/usr/lib/jvm"]
        + ((try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib")) ?? [])
            .filter { $0.hasPrefix("python3") }.sorted().map { "/usr/lib/" + $0 }

    /// Up to `perExtension` readable regular files (symlinks resolved) of 1 byte to 4 MiB per extension, spread
    /// evenly over everything found, in a stable order.
    static func corpus() -> [String: [String]] {
        var found: [String: [String]] = [:]
        let wanted = Set(extensions)
        for root in roots {
            guard let walker = FileManager.default.enumerator(atPath: root) else { continue }
            while let relative = walker.nextObject() as? String {
                let name = (relative as NSString).lastPathComponent
                let ext = (name as NSString).pathExtension.lowercased()
                guard wanted.contains(ext), found[ext, default: []].count < 2_000, name.utf8.count < 200,
                    !name.hasPrefix(".")
                else { continue }
                let path = root + "/" + relative
                var status = stat()
                guard stat(path, &status) == 0, status.st_mode & S_IFMT == S_IFREG, status.st_size > 0,
                    status.st_size <= 4 << 20, access(path, R_OK) == 0
                else { continue }
                found[ext, default: []].append(path)
            }
        }
        return found.mapValues { paths in
            let sorted = paths.sorted()
            let step = max(1, sorted.count / perExtension)
            return Array(stride(from: 0, to: sorted.count, by: step).prefix(perExtension).map { sorted[$0] })
        }
    }

    /// A processor that writes one line per accepted file to `record`: its type and its suggested name.
    static func recorder(_ record: String) -> String {
        #"printf '%s\t%s\n' "$SHAREPIPE_TYPE" "$SHAREPIPE_SUGGESTED_NAME" >> '"# + record + "'"
    }

    @Test func debianFilesAreTakenForWhatTheyAreAndLiesAreStillRefused() async throws {
        let corpus = Self.corpus()
        for ext in Self.extensions where corpus[ext, default: []].isEmpty {
            print("real corpus: no .\(ext) file on this machine (looked under \(Self.roots.joined(separator: ", ")))")
        }
        let total = corpus.values.reduce(0) { $0 + $1.count }
        try #require(total >= 100, "too few real files on this machine to judge: \(total)")
        try await withTemporaryDirectory { dir in
            let inbox = dir + "/inbox"
            var sources: [String: String] = [:]
            for (index, path) in corpus.values.joined().sorted().enumerated() {
                let name = "\(index)-" + (path as NSString).lastPathComponent
                sources[name] = path
                // The bytes, not the entry: /etc/ssl/certs holds symlinks to the certificates.
                try writeFile(inbox + "/" + name, Array(try Data(contentsOf: URL(fileURLWithPath: path))))
            }
            let lies: [String: [UInt8]] = [
                "lie-text.jpg": Array("Meet at noon by the old bridge.\n".utf8),
                "lie-random.png": noise(4096),
                "lie-pdf.jpg": try fixtureContents("files/document.pdf"),
                "lie-html.pdf": try fixtureContents("files/page.html"),
                "lie-png.txt": try fixtureContents("files/image.png"),
                "lie-gif.md": try fixtureContents("files/anim.gif"),
            ]
            for (name, bytes) in lies { try writeFile(inbox + "/" + name, bytes) }

            let record = dir + "/accepted.tsv"
            let result = try await runSharepipe(
                [
                    "daemon", "--oneshot", "--inbox", inbox, "--state", dir + "/state", "--processor", "exec",
                    "--exec", Self.recorder(record), "--log-level", "error",
                ],
                timeout: .seconds(240))
            #expect(result.status == 3, "\(result.stderr)")

            let accepted = (try? String(contentsOfFile: record, encoding: .utf8)) ?? ""
            let types = accepted.split(separator: "\n").map { $0.split(separator: "\t", maxSplits: 1) }
            var refusals: [(name: String, code: String, declared: [String], sniffed: String)] = []
            for file in directoryEntries(inbox + "/.rejected") where file.hasSuffix(".reason.json") {
                let reason = try jsonFile(inbox + "/.rejected/" + file)
                refusals.append((
                    String(file.dropLast(".reason.json".count)), reason["code"] as? String ?? "?",
                    reason["declaredTypes"] as? [String] ?? [], reason["sniffedMimeType"] as? String ?? "-"))
            }
            let corpusRefusals = refusals.filter { !lies.keys.contains($0.name) }
            let mismatches = corpusRefusals.filter { $0.code == "ERR_TYPE_MISMATCH" }
            for refusal in corpusRefusals {
                print("real corpus: refused \(refusal.code): declared \(refusal.declared.joined(separator: ",")), "
                    + "sniffed \(refusal.sniffed): \(sources[refusal.name] ?? refusal.name)")
            }
            let dynamic = types.filter { $0.first?.hasPrefix("dyn.") == true }
            let dynamicShare = Double(dynamic.count) / Double(max(1, types.count))
            print("real corpus: \(total) files, \(types.count) accepted, \(mismatches.count) refused as "
                + "ERR_TYPE_MISMATCH, \(dynamic.count) accepted with a dyn. type "
                + String(format: "(%.1f %%)", dynamicShare * 100))
            for line in dynamic { print("real corpus: dynamic type \(line[0]) for \(sources[String(line[1])] ?? "?")") }

            #expect(types.count + corpusRefusals.count == total)
            #expect(Double(mismatches.count) <= Double(total) / 100, "more than 1 % refused as ERR_TYPE_MISMATCH")
            #expect(corpusRefusals.allSatisfy { $0.code == "ERR_TYPE_MISMATCH" })
            #expect(dynamicShare <= 0.05, "more than 5 % of accepted files got a dyn. type")
            for name in lies.keys {
                let refusal = refusals.first { $0.name == name }
                #expect(refusal?.code == "ERR_TYPE_MISMATCH", "\(name) was not refused: \(String(describing: refusal))")
            }
            #expect(!types.contains { lies.keys.contains(String($0.last ?? "")) })
        }
    }

    @Test func aPNGDeclaredAsJPEGThroughShareIsRefused() async throws {
        try await withTemporaryDirectory { dir in
            let result = try await runSharepipe([
                "share", "--state", dir + "/state", "--json", fixturePath("files/image.png") + "=public.jpeg",
            ])
            #expect(result.status == 4, "\(result.stderr)")
            let receipt = try result.jsonObject
            let attachment = try #require((receipt["attachments"] as? [[String: Any]])?.first)
            #expect((attachment["error"] as? [String: Any])?["code"] as? String == "ERR_TYPE_MISMATCH")
            #expect(attachment["sniffedMimeType"] as? String == "image/png")
        }
    }

    @Test func aOneByteNoteAndAURLSharedAsTextAreAccepted() async throws {
        try await withTemporaryDirectory { dir in
            let note = try writeFile(dir + "/note", "x")
            let url = try writeFile(dir + "/link", "https://example.com/articles/share-extensions?id=7\n")
            let shared = try await runSharepipe([
                "share", "--state", dir + "/state", "--json", note + "=public.plain-text", url + "=public.url",
            ])
            #expect(shared.status == 0, "\(shared.stdout)\(shared.stderr)")
            let attachments = try #require(try shared.jsonObject["attachments"] as? [[String: Any]])
            #expect(attachments.map { $0["status"] as? String } == ["copied", "copied"])
            #expect(attachments.map { $0["typeIdentifier"] as? String } == ["public.plain-text", "public.url"])

            // Dropped without a name that says anything, the note is still text.
            try writeFile(dir + "/inbox/note", "x")
            let dropped = try await runSharepipe([
                "daemon", "--oneshot", "--inbox", dir + "/inbox", "--state", dir + "/daemon-state", "--processor",
                "exec", "--exec", Self.recorder(dir + "/accepted.tsv"),
            ])
            #expect(dropped.status == 0, "\(dropped.stderr)")
            #expect(try String(contentsOfFile: dir + "/accepted.tsv", encoding: .utf8) == "public.plain-text\tnote\n")
        }
    }

    @Test func minFreeLetsATinyStateFileSystemIngest() async throws {
        try await withTemporaryDirectory { dir in
            let state = dir + "/state"
            try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
            guard getuid() == 0 else {
                print("skipped minFreeLetsATinyStateFileSystemIngest: mounting a tmpfs needs root")
                return
            }
            let mount = try runProgram("/bin/mount", ["-t", "tmpfs", "-o", "size=4m", "tmpfs", state])
            guard mount.status == 0 else {
                print("skipped minFreeLetsATinyStateFileSystemIngest: mount -t tmpfs failed: \(mount.stderr)")
                return
            }
            defer { _ = try? runProgram("/bin/umount", [state]) }
            let photo = fixturePath("files/photo.jpg")

            let refused = try await runSharepipe(["share", "--state", state, "--json", photo])
            #expect(refused.status == 1)
            #expect((try refused.jsonObject["error"] as? [String: Any])?["code"] as? String == "ERR_SPOOL_FULL")
            #expect(refused.stdout.contains("--min-free"))

            let taken = try await runSharepipe(["share", "--state", state, "--json", "--min-free", "1M", photo])
            #expect(taken.status == 0, "\(taken.stdout)\(taken.stderr)")

            try writeFile(dir + "/inbox/photo.jpg", try fixtureContents("files/photo.jpg"))
            try writeFile(dir + "/config.json", #"{"min-free": "512K", "max-pending-shares": 10}"#)
            let daemon = try await runSharepipe([
                "daemon", "--oneshot", "--inbox", dir + "/inbox", "--state", state, "--config", dir + "/config.json",
                "--processor", "discard",
            ])
            #expect(daemon.status == 0, "\(daemon.stderr)")
            #expect(directoryEntries(dir + "/inbox").isEmpty)
        }
    }

    @Test func aHardLinkIntoTheInboxIsProcessedWithinSettlePlusOneSecond() async throws {
        try await withTemporaryDirectory { dir in
            let inbox = dir + "/inbox"
            let output = dir + "/processed"
            try FileManager.default.createDirectory(atPath: inbox, withIntermediateDirectories: true)
            let daemon = try SharepipeProcess([
                "daemon", "--inbox", inbox, "--state", dir + "/state", "--output", output, "--settle", "300",
            ])
            let ready = try await eventually(.seconds(30)) { daemon.stderrSoFar.contains("daemon.ready") }
            try #require(ready, "\(daemon.stderrSoFar)")
            // A download tool hard-links the finished file into the watched folder: no writer ever opens it there.
            try writeFile(dir + "/downloads/finished.jpg", try fixtureContents("files/photo.jpg"))
            let linked = Date()
            #expect(link(dir + "/downloads/finished.jpg", inbox + "/finished.jpg") == 0)
            let stored = try await eventually(.seconds(30)) {
                directoryEntries(output + "/image").contains("finished.jpg")
            }
            #expect(stored, "\(daemon.stderrSoFar)")
            // When the store made the name, as its directory recorded it (see `modificationTime`).
            let elapsed = try modificationTime(output + "/image").timeIntervalSince(linked)
            #expect(elapsed < 1.3, "stored after \(elapsed) s")
            #expect(!FileManager.default.fileExists(atPath: inbox + "/finished.jpg"))
            // The link is gone from the inbox; the user's own name for the file is untouched.
            #expect(FileManager.default.fileExists(atPath: dir + "/downloads/finished.jpg"))
            daemon.signal(SIGTERM)
            #expect(try await daemon.waitForExit(timeout: .seconds(30)).status == 0)
        }
    }

    @Test func doctorPrintsTheSpoolLimitsAndWarnsBelowMinFreePlusTheLargestFile() async throws {
        try await withTemporaryDirectory { dir in
            func check(_ arguments: [String], _ name: String) async throws -> (status: Int32, check: [String: Any]) {
                let result = try await runSharepipe(["doctor", "--state", dir + "/state", "--json"] + arguments)
                let checks = try #require(try result.json as? [[String: Any]])
                return (result.status, try #require(checks.first { $0["check"] as? String == name }))
            }
            let defaults = try await check([], "spool-limits")
            let expected = "--min-free 64.0 MiB, --max-pending-shares 50000, --max-pending-bytes 64.0 GiB, "
                + "--max-file-size 4.0 GiB"
            #expect(defaults.check["detail"] as? String == expected)

            try writeFile(dir + "/config.json", #"{"max-pending-shares": 7, "min-free": "1M"}"#)
            let configured = try await check(["--config", dir + "/config.json", "--max-pending-bytes", "2G"], "spool-limits")
            #expect(configured.check["detail"] as? String
                == "--min-free 1.0 MiB, --max-pending-shares 7, --max-pending-bytes 2.0 GiB, --max-file-size 4.0 GiB")

            // No file system here has a petabyte free: a file that large would not fit, a warning, not a failure.
            let tight = try await check(["--max-file-size", "1024T"], "free-space")
            #expect(tight.status == 0)
            #expect(tight.check["status"] as? String == "warn")
            #expect((tight.check["detail"] as? String)?.contains("less than --min-free plus --max-file-size") == true)
            let below = try await check(["--min-free", "1024T"], "free-space")
            #expect(below.status == 1)
            #expect(below.check["status"] as? String == "fail")
            #expect((below.check["detail"] as? String)?.contains("ERR_SPOOL_FULL") == true)
        }
    }

    @Test func requeueOfAnUnknownShareIsNotFound() async throws {
        try await withTemporaryDirectory { dir in
            let state = dir + "/state"
            _ = try await runSharepipe(["share", "--state", state, fixturePath("files/photo.jpg")])
            let unknown = UUID().uuidString
            let result = try await runSharepipe(["requeue", unknown, "--state", state])
            #expect(result.status == 1)
            #expect(result.stderr.contains("ERR_NOT_FOUND"))
            #expect(result.stderr.contains(unknown))
        }
    }
}

/// Bytes from a fixed linear congruential sequence: no signature and not text, the same on every run.
private func noise(_ count: Int) -> [UInt8] {
    var state: UInt32 = 0x1111_2222
    return (0..<count).map { _ in
        state = state &* 1_664_525 &+ 1_013_904_223
        return UInt8(truncatingIfNeeded: state >> 24)
    }
}

private func fixtureContents(_ name: String) throws -> [UInt8] {
    Array(try Data(contentsOf: URL(fileURLWithPath: fixturePath(name))))
}

/// Runs a system program (mount, umount) and waits for it.
private func runProgram(_ path: String, _ arguments: [String]) throws -> (status: Int32, stderr: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    let errors = Pipe()
    process.standardError = errors
    process.standardOutput = FileHandle.nullDevice
    try launchSerially(process)
    process.waitUntilExit()
    let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    return (process.terminationStatus, text)
}
