import Foundation
import Glibc
import Synchronization
import Testing
@testable import SharepipeCore
@testable import SharepipeDaemon
@testable import SharepipeIngest
@testable import SharepipeLedger
@testable import SharepipeSpool
@testable import SharepipeSystem

@Suite(.timeLimit(.minutes(5))) struct DaemonTests {
    func configuration(_ dir: String) -> DaemonConfiguration {
        var configuration = DaemonConfiguration()
        configuration.inbox = dir + "/inbox"
        configuration.state = dir + "/state"
        configuration.processor = .store(output: dir + "/processed")
        configuration.settle = .milliseconds(100)
        configuration.consumer.retryDelay = .milliseconds(10)
        return configuration
    }

    func files(under path: String) -> [String] {
        (FileManager.default.enumerator(atPath: path)?.allObjects as? [String] ?? []).filter {
            var isDirectory: ObjCBool = false
            return FileManager.default.fileExists(atPath: path + "/" + $0, isDirectory: &isDirectory) && !isDirectory.boolValue
        }.sorted()
    }

    @Test func oneshotIngestsFilesAndFoldersAndRejectsHostileEntries() async throws {
        try await withTemporaryDirectory { dir in
            var configuration = configuration(dir)
            configuration.oneshot = true
            let inbox = configuration.inbox
            try FileManager.default.createDirectory(atPath: inbox + "/album/nested", withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: fixture("files/photo.jpg"), toPath: inbox + "/photo.jpg")
            try FileManager.default.copyItem(atPath: fixture("files/image.png"), toPath: inbox + "/album/a.png")
            try FileManager.default.copyItem(atPath: fixture("files/notes.txt"), toPath: inbox + "/album/nested/b.txt")
            try FileManager.default.copyItem(atPath: fixture("hostile/lying.jpg"), toPath: inbox + "/lying.jpg")
            try writeFile(inbox + "/.hidden", "hidden")
            try writeFile(inbox + "/download.part", "partial")
            try writeFile(dir + "/secret.txt", "secret")
            try FileManager.default.createSymbolicLink(atPath: inbox + "/link.txt", withDestinationPath: dir + "/secret.txt")
            #expect(mkfifo(inbox + "/pipe", 0o600) == 0)

            let lines = Mutex<[String]>([])
            let logger = Logger(sink: { line in lines.withLock { $0.append(line) } })
            let status = try await Daemon(configuration: configuration, logger: logger).run()

            #expect(status == 3)
            #expect(files(under: dir + "/processed") == ["image/a.png", "image/photo.jpg", "text/b.txt"])
            let inboxLeft = try System.listDirectory(inbox).sorted()
            #expect(inboxLeft == [".hidden", ".rejected", "download.part"])
            let rejected = try System.listDirectory(inbox + "/.rejected").sorted()
            #expect(rejected == [
                "link.txt", "link.txt.reason.json", "lying.jpg", "lying.jpg.reason.json", "pipe", "pipe.reason.json",
            ])
            let reason = try JSONSerialization.jsonObject(
                with: Data(try System.readFile(inbox + "/.rejected/lying.jpg.reason.json"))) as? [String: Any]
            #expect(reason?["code"] as? String == "ERR_TYPE_MISMATCH")
            #expect(reason?["sniffedMimeType"] as? String == "text/plain")
            let linkReason = try JSONSerialization.jsonObject(
                with: Data(try System.readFile(inbox + "/.rejected/link.txt.reason.json"))) as? [String: Any]
            #expect(linkReason?["code"] as? String == "ERR_NOT_REGULAR_FILE")
            #expect(try String(contentsOfFile: dir + "/secret.txt", encoding: .utf8) == "secret")
            let spool = try Spool(root: configuration.state)
            for stage in Spool.Stage.allCases {
                #expect(try spool.shareIDs(in: stage).isEmpty, "\(stage) is not empty")
            }
            let log = lines.withLock { $0.joined(separator: "\n") }
            #expect(!log.contains("lying.jpg") && !log.contains("secret"))
        }
    }

    @Test func oddNamesAreIngestedWithoutLosingBytes() async throws {
        try await withTemporaryDirectory { dir in
            var configuration = configuration(dir)
            configuration.oneshot = true
            try FileManager.default.createDirectory(atPath: configuration.inbox, withIntermediateDirectories: true)
            // Copied byte for byte with cp: the names include invalid UTF-8, which Swift strings cannot carry.
            let copy = Process()
            copy.executableURL = URL(fileURLWithPath: "/bin/sh")
            copy.arguments = ["-c", "cp -- \"$0\"/*.jpg \"$1\"/", fixture("hostile"), configuration.inbox]
            try copy.run()
            copy.waitUntilExit()
            let dropped = try FileManager.default.contentsOfDirectory(atPath: configuration.inbox).count
            let status = try await Daemon(configuration: configuration, logger: Logger(level: .error)).run()
            #expect(status == 3)
            let stored = files(under: dir + "/processed/image")
            let rejected = try System.listDirectory(configuration.inbox + "/.rejected").filter { !$0.hasSuffix(".reason.json") }
            // lying.jpg is text and truncated.jpg still sniffs as JPEG: every other odd name is stored.
            #expect(rejected == ["lying.jpg"])
            #expect(stored.count == dropped - 1)
            #expect(try System.listDirectory(configuration.inbox) == [".rejected"])
        }
    }

    @Test func rejectionsSurviveIgnoreRulesThatDoNotHideThem() async throws {
        try await withTemporaryDirectory { dir in
            var configuration = configuration(dir)
            configuration.oneshot = true
            configuration.ignore = ["*.bak"]
            let inbox = configuration.inbox
            try FileManager.default.createDirectory(atPath: inbox, withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: fixture("hostile/lying.jpg"), toPath: inbox + "/lying.jpg")
            #expect(try await Daemon(configuration: configuration, logger: Logger(level: .error)).run() == 4)
            let before = try System.listDirectory(inbox + "/.rejected").sorted()
            let reason = try System.readFile(inbox + "/.rejected/lying.jpg.reason.json")
            #expect(before == ["lying.jpg", "lying.jpg.reason.json"])

            // A second run, a doctor probe lying around and a new drop: only the drop is ingested.
            try writeFile(inbox + "/.sharepipe-probe-1.tmp", "")
            try writeFile(inbox + "/old.bak", "backup")
            try writeFile(inbox + "/note.txt", "note")
            #expect(try await Daemon(configuration: configuration, logger: Logger(level: .error)).run() == 0)
            #expect(try System.listDirectory(inbox + "/.rejected").sorted() == before)
            #expect(try System.readFile(inbox + "/.rejected/lying.jpg.reason.json") == reason)
            #expect(try System.listDirectory(inbox).sorted() == [".rejected", ".sharepipe-probe-1.tmp", "old.bak"])
            #expect(files(under: dir + "/processed") == ["text/note.txt"])
        }
    }

    @Test func liveDaemonIngestsDropsAndStopsOnCancellation() async throws {
        try await withTemporaryDirectory { dir in
            var configuration = configuration(dir)
            configuration.processor = .discard
            let lines = Mutex<[String]>([])
            let logger = Logger(level: .info, sink: { line in lines.withLock { $0.append(line) } })
            let daemon = Daemon(configuration: configuration, logger: logger)
            let task = Task { try await daemon.run() }
            // The inbox exists and is watched once the daemon says it is ready; drops before that could be missed.
            // The daemon runs on the test process's cooperative pool, which the parallel end-to-end tests' blocking
            // waits can hold for tens of seconds: the deadlines are generous, the test still waits for the event.
            func readyLine() -> String? { lines.withLock { $0.first { $0.contains("event=daemon.ready") } } }
            #expect(try await eventually(.seconds(120)) { readyLine() != nil })
            let ready = try #require(readyLine())
            #expect(ready.contains("inbox=\(configuration.inbox)") && ready.contains("state=\(configuration.state)"))
            #expect(ready.contains("processor=discard") && ready.contains("accept=public.item"))
            for index in 0..<20 {
                try writeFile(configuration.inbox + "/note-\(index).txt", "note \(index)")
            }
            #expect(try await eventually(.seconds(120), every: .milliseconds(100)) {
                try System.listDirectory(configuration.inbox).isEmpty
            })
            let spool = try Spool(root: configuration.state)
            #expect(try await eventually(.seconds(120), every: .milliseconds(100)) {
                try spool.shareIDs(in: .incoming).isEmpty && spool.shareIDs(in: .processing).isEmpty
            })
            task.cancel()
            _ = try? await task.value
        }
    }
}
