import Foundation
import Glibc
import Testing

@testable import sharepipe

/// Large shares through the built binary: interrupting one, watching one in `status`, and its progress bar.
@Suite(.timeLimit(.minutes(5)))
struct LargeShareTests {
    /// The large file's size: a copy of it takes seconds, a window the tests act in.
    static let size = 4 << 30

    /// A 4 GiB file made in an instant (sparse): copying it still writes and hashes every byte, until cancelled.
    func largeFile(_ dir: String) throws -> String {
        let path = dir + "/large.bin"
        #expect(FileManager.default.createFile(atPath: path, contents: nil))
        #expect(truncate(path, off_t(Self.size)) == 0)
        return path
    }

    /// Whether a copy in `state/staging` has bytes in it.
    static func isCopying(_ state: String) -> Bool {
        let shares = (try? FileManager.default.contentsOfDirectory(atPath: state + "/staging")) ?? []
        return shares.contains { share in
            let files = (try? FileManager.default.contentsOfDirectory(atPath: state + "/staging/" + share)) ?? []
            return files.contains { file in
                let path = "\(state)/staging/\(share)/\(file)"
                return ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int64 ?? 0) > 0
            }
        }
    }

    /// Starts `sharepipe share --json` of the file and, on a thread of its own — not on the cooperative pool,
    /// which other tests' waits can hold for longer than the whole copy takes — waits until its copy in staging
    /// has bytes in it and runs `whileCopying` there at once.
    func startLargeShare<T: Sendable>(
        _ source: String, state: String, whileCopying: @escaping @Sendable (SharepipeProcess) throws -> T
    ) async throws -> (SharepipeProcess, T) {
        let process = try SharepipeProcess(["share", "--state", state, "--json", source + "=public.data"])
        let outcome: T = try await withCheckedThrowingContinuation { continuation in
            Thread {
                let deadline = ContinuousClock.now + .seconds(30)
                while !Self.isCopying(state) && ContinuousClock.now < deadline { usleep(1000) }
                guard Self.isCopying(state) else {
                    continuation.resume(throwing: SupportError("the copy never started: \(process.stderrSoFar)"))
                    return
                }
                continuation.resume(with: Result { try whileCopying(process) })
            }.start()
        }
        return (process, outcome)
    }

    /// `sharepipe status --json` of the state directory.
    func status(_ state: String) async throws -> [String: Any] {
        let result = try await runSharepipe(["status", "--state", state, "--json"])
        #expect(result.status == 0)
        return try result.jsonObject
    }

    @Test func sigintDuringALargeShareRollsItBackWithAReceipt() async throws {
        try await withTemporaryDirectory { dir in
            let state = dir + "/state"
            let (share, _) = try await startLargeShare(try largeFile(dir), state: state) { $0.signal(SIGINT) }
            let result = try await share.waitForExit()
            #expect(result.status == 1)
            #expect(result.stderr.contains("cancelling: rolling the share back"))
            let receipt = try result.jsonObject
            #expect(receipt["status"] as? String == "failed")
            #expect((receipt["error"] as? [String: Any])?["code"] as? String == "ERR_CANCELLED")
            let attachments = try #require(receipt["attachments"] as? [[String: Any]])
            #expect(attachments.map { $0["status"] as? String } == ["failed"])
            #expect(attachments.map { ($0["error"] as? [String: Any])?["code"] as? String } == ["ERR_CANCELLED"])
            #expect(try FileManager.default.contentsOfDirectory(atPath: state + "/staging").isEmpty)
            #expect(try FileManager.default.contentsOfDirectory(atPath: state + "/incoming").isEmpty)
            // The ledger knows the share and that it was rolled back.
            let report = try await status(state)
            #expect(report["rejected"] as? Int == 1)
            let stages = ["staging": 0, "incoming": 0, "processing": 0, "quarantine": 0]
            #expect(report["stages"] as? [String: Int] == stages)
            #expect(report["pendingBytes"] as? Int == 0)
        }
    }

    @Test func secondSigintEndsTheShareAtOnceWithNothingPublished() async throws {
        try await withTemporaryDirectory { dir in
            let state = dir + "/state"
            let (share, cancelling) = try await startLargeShare(try largeFile(dir), state: state) { share in
                share.signal(SIGINT)
                let deadline = ContinuousClock.now + .seconds(10)
                while !share.stderrSoFar.contains("cancelling:") && ContinuousClock.now < deadline { usleep(1000) }
                share.signal(SIGINT)
                return share.stderrSoFar.contains("cancelling:")
            }
            #expect(cancelling)
            let result = try await share.waitForExit(timeout: .seconds(10))
            // The second interrupt either ended the process by SIGINT (130), or came after the rollback had
            // already finished and the receipt was out (1). Either way nothing is published.
            #expect(result.status == 130 || result.status == 1)
            if result.status == 130 { #expect(result.stdout.isEmpty) }
            #expect(try FileManager.default.contentsOfDirectory(atPath: state + "/incoming").isEmpty)
            let report = try await status(state)
            #expect((report["stages"] as? [String: Int])?["incoming"] == 0)
            #expect(report["processed"] as? Int == 0)
            // A partial copy left by the abrupt exit is never published, and the next start removes it.
            let consume = try await runSharepipe(["consume", "--state", state, "--processor", "discard"])
            #expect(consume.status == 0)
            #expect(try FileManager.default.contentsOfDirectory(atPath: state + "/staging").isEmpty)
            #expect(try FileManager.default.contentsOfDirectory(atPath: state + "/incoming").isEmpty)
        }
    }

    @Test func statusShowsTheCopyInFlightAndSigtermRollsItBack() async throws {
        try await withTemporaryDirectory { dir in
            let state = dir + "/state"
            let (share, (json, human)) = try await startLargeShare(try largeFile(dir), state: state) { share in
                let json = try runSharepipeBlocking(["status", "--state", state, "--json"])
                let human = try runSharepipeBlocking(["status", "--state", state])
                share.signal(SIGTERM)
                return (json, human)
            }
            #expect(json.status == 0)
            let inFlight = try #require(try json.jsonObject["inFlight"] as? [String: Int])
            #expect(inFlight["copies"] == 1)
            #expect(inFlight["bytesTotal"] == Self.size)
            #expect((1...Self.size).contains(inFlight["bytesDone"] ?? 0))
            #expect(human.stdout.contains("1 copy, "))
            let result = try await share.waitForExit()
            #expect(result.status == 1)
            #expect((try result.jsonObject["error"] as? [String: Any])?["code"] as? String == "ERR_CANCELLED")
            let after = try await status(state)["inFlight"] as? [String: Int]
            #expect(after == ["copies": 0, "bytesDone": 0, "bytesTotal": 0])
        }
    }

    @Test func progressWithRateIsDrawnOnATerminalAndNotOnAPipe() async throws {
        try await withTemporaryDirectory { dir in
            var bytes = [UInt8](repeating: 0, count: 24 << 20)
            for index in stride(from: 0, to: bytes.count, by: 4096) {
                bytes[index] = UInt8(truncatingIfNeeded: index >> 12)
            }
            let source = try writeFile(dir + "/video.bin", bytes)
            let binary = try sharepipeBinaryPath()
            // script(1) runs the command on a pseudo-terminal and copies what it draws to its own stdout.
            let command = "'\(binary)' share --state '\(dir)/state-tty' '\(source)=public.data'"
            let onTerminal = try run("/usr/bin/script", ["-qec", command, "/dev/null"])
            #expect(onTerminal.status == 0)
            #expect(onTerminal.stdout.contains("\rcopying ["))
            #expect(onTerminal.stdout.contains("100% 24.0 MiB / 24.0 MiB, "))
            // The rate is in MiB/s or, on a fast disk, GiB/s.
            #expect(onTerminal.stdout.contains("iB/s\u{1B}[K\r\n"))

            let onPipe = try run(binary, ["share", "--state", dir + "/state-pipe", source + "=public.data"])
            #expect(onPipe.status == 0)
            #expect(onPipe.stdout.contains("complete"))
            #expect(!onPipe.stderr.contains("copying ["))
            #expect(!onPipe.stderr.contains("\r"))
        }
    }

    @Test func progressFrameShowsRateAndTimeLeftOnceSettled() {
        let gibibyte: Int64 = 1 << 30
        #expect(ProgressBar.render(label: "copying", completed: 0, total: gibibyte, elapsed: nil, final: false)
            == "\rcopying [--------------------] 0% 0 B / 1.0 GiB\u{1B}[K")
        #expect(ProgressBar.render(
            label: "copying", completed: gibibyte / 4, total: gibibyte, elapsed: .seconds(1), final: false)
            == "\rcopying [#####---------------] 25% 256.0 MiB / 1.0 GiB, 256.0 MiB/s, 3s left\u{1B}[K")
        #expect(ProgressBar.render(
            label: "copying", completed: 16 << 20, total: gibibyte, elapsed: .seconds(2), final: false)
            == "\rcopying [--------------------] 1% 16.0 MiB / 1.0 GiB, 8.0 MiB/s, 2m 6s left\u{1B}[K")
        #expect(ProgressBar.render(
            label: "copying", completed: gibibyte, total: gibibyte, elapsed: .milliseconds(1500), final: true)
            == "\rcopying [####################] 100% 1.0 GiB / 1.0 GiB, 682.7 MiB/s\u{1B}[K")
    }
}

/// What a program run with its output on pipes produced.
private struct PipedResult {
    var status: Int32
    var stdout: String
    var stderr: String
}

/// Runs a program with stdin from /dev/null and stdout and stderr on pipes, and waits for it.
private func run(_ executable: String, _ arguments: [String]) throws -> PipedResult {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    let stdout = Pipe()
    let stderr = Pipe()
    process.standardInput = FileHandle.nullDevice
    process.standardOutput = stdout
    process.standardError = stderr
    try process.run()
    // Both pipes are drained at once so neither fills up and stalls the program.
    let errors = DataBox()
    let drained = DispatchGroup()
    DispatchQueue.global().async(group: drained) { errors.data = stderr.fileHandleForReading.readDataToEndOfFile() }
    let output = stdout.fileHandleForReading.readDataToEndOfFile()
    drained.wait()
    process.waitUntilExit()
    return PipedResult(
        status: process.terminationStatus, stdout: String(decoding: output, as: UTF8.self),
        stderr: String(decoding: errors.data, as: UTF8.self))
}

/// Bytes handed from the draining queue to the waiting test; the group's wait orders the accesses.
private final class DataBox: @unchecked Sendable {
    var data = Data()
}
