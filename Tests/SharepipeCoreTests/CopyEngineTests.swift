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

/// Pseudo-random bytes, different for each seed.
private func randomBytes(_ count: Int, seed: UInt64) -> [UInt8] {
    var words = [UInt64](repeating: 0, count: (count + 7) / 8)
    var state = seed
    for index in words.indices {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        words[index] = state
    }
    return words.withUnsafeBytes { Array($0.prefix(count)) }
}

/// A task to cancel from a callback that may run before the task is known.
private final class Canceller: Sendable {
    private let state = Mutex<(task: Task<ShareReceipt, Never>?, requested: Bool)>((nil, false))

    func hold(_ task: Task<ShareReceipt, Never>) {
        let requested = state.withLock { state in
            state.task = task
            return state.requested
        }
        if requested { task.cancel() }
    }

    func cancel() {
        let task = state.withLock { state in
            state.requested = true
            return state.task
        }
        task?.cancel()
    }
}

/// `sha256sum FILE`, the digest a user would compare with.
private func sha256sum(_ path: String) throws -> String {
    let process = Process()
    let output = Pipe()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
    process.arguments = [path]
    process.standardOutput = output
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return String(String(decoding: data, as: UTF8.self).prefix(64))
}

private func size(ofFile path: String) throws -> Int64 {
    try System.lstat(path).size
}

/// Appends bytes to a file, as a writer that is not done yet would.
private func append(_ bytes: [UInt8], to path: String) throws {
    let handle = try #require(FileHandle(forWritingAtPath: path))
    try handle.seekToEnd()
    try handle.write(contentsOf: Data(bytes))
    try handle.close()
}

@Suite(.timeLimit(.minutes(5))) struct CopyEngineTests {
    /// An engine with the given limits, calling `progress` with the bytes copied after every chunk.
    func engine(
        maxFileSize: Int64 = 1 << 40, maxShareSize: Int64 = 1 << 40, progress: (@Sendable (Int64) -> Void)? = nil
    ) -> CopyEngine {
        CopyEngine(
            maxFileSize: maxFileSize, maxShareSize: maxShareSize, share: CopyEngine.ShareState(), progress: progress)
    }

    /// Calls `body` once, after the first chunk has been copied.
    final class AfterFirstChunk: Sendable {
        private let done = Atomic<Bool>(false)
        private let body: @Sendable (Int64) throws -> Void
        let failure = Mutex<(any Error)?>(nil)

        init(_ body: @escaping @Sendable (Int64) throws -> Void) {
            self.body = body
        }

        func callAsFunction(_ bytes: Int64) {
            guard !done.exchange(true, ordering: .relaxed) else { return }
            do {
                try body(bytes)
            } catch {
                failure.withLock { $0 = error }
            }
        }
    }

    @Test func hashOfALargeCopyEqualsSha256sumOfTheSource() async throws {
        try await withTemporaryDirectory { dir in
            // Several chunks and an odd tail, so every range boundary of the pipeline is crossed.
            let source = try writeFile(dir + "/source.bin", randomBytes(5 * CopyEngine.chunkSize + 12_345, seed: 7))
            let copy = dir + "/copy.bin"
            let result = try engine().copyFile(from: source, to: .init(path: copy))
            let expected = try sha256sum(source)
            #expect(result.sha256 == expected)
            #expect(try sha256sum(copy) == expected)
            #expect(result.bytes == 5 * Int64(CopyEngine.chunkSize) + 12_345)
            #expect(try size(ofFile: copy) == result.bytes)
            #expect(result.head == Array(try System.readFile(source, limit: Int.max).prefix(Sniffer.sniffLength)))
        }
    }

    @Test func copiesFromAnOpenDescriptorWhosePathIsGone() async throws {
        try await withTemporaryDirectory { dir in
            let bytes = randomBytes(3 * CopyEngine.chunkSize + 1, seed: 8)
            let source = try writeFile(dir + "/source.bin", bytes)
            let expected = try sha256sum(source)
            let input = try FileDescriptor.open(source, flags: O_RDONLY | O_NOFOLLOW)
            try System.unlink(source)
            let result = try engine().copyFile(
                from: input, sizeHint: Int64(bytes.count), to: .init(path: dir + "/copy.bin"))
            #expect(result.sha256 == expected)
            #expect(result.bytes == Int64(bytes.count))
        }
    }

    @Test func sourceOnAnotherFileSystemIsCopiedWithReadsAndWritesAndTheSameHash() async throws {
        let shm = "/dev/shm/sharepipe-test-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: shm) }
        try await withTemporaryDirectory { dir in
            let source = try writeFile(shm, randomBytes(2 * CopyEngine.chunkSize + 777, seed: 9))
            let result = try engine().copyFile(from: source, to: .init(path: dir + "/copy.bin"))
            #expect(result.sha256 == (try sha256sum(source)))
            #expect(try sha256sum(dir + "/copy.bin") == (try sha256sum(source)))
        }
    }

    @Test func sourceThatGrowsDuringTheCopyIsCopiedToItsNewEnd() async throws {
        try await withTemporaryDirectory { dir in
            let source = try writeFile(dir + "/source.bin", randomBytes(2 * CopyEngine.chunkSize, seed: 10))
            let grow = AfterFirstChunk { _ in try append(randomBytes(3 << 20, seed: 11), to: source) }
            let copy = dir + "/copy.bin"
            let result = try engine(progress: { grow($0) }).copyFile(from: source, to: .init(path: copy))
            #expect(grow.failure.withLock { $0 } == nil)
            #expect(result.bytes == 2 * Int64(CopyEngine.chunkSize) + (3 << 20))
            #expect(result.sha256 == (try sha256sum(source)))
            #expect(try sha256sum(copy) == result.sha256)
        }
    }

    @Test func sourceThatGrowsPastTheLimitDuringTheCopyIsTooLarge() async throws {
        try await withTemporaryDirectory { dir in
            let original = 2 * Int64(CopyEngine.chunkSize)
            let source = try writeFile(dir + "/source.bin", randomBytes(Int(original), seed: 12))
            let grow = AfterFirstChunk { _ in try append(randomBytes(3 << 20, seed: 13), to: source) }
            let copy = dir + "/copy.bin"
            let limited = engine(maxFileSize: original + (1 << 20), progress: { grow($0) })
            do {
                _ = try limited.copyFile(from: source, to: .init(path: copy))
                Issue.record("a source over the limit was copied")
            } catch let error as ShareError {
                #expect(error.code == .tooLarge)
            }
            #expect(!FileManager.default.fileExists(atPath: copy))
        }
    }

    @Test(arguments: [
        // Cut after the part already copied: the copy goes on to the new end.
        (keep: CopyEngine.chunkSize + (1 << 20), expectedBytes: CopyEngine.chunkSize + (1 << 20)),
        // Cut inside the part already copied: the copy holds what it had, and says so.
        (keep: 1 << 20, expectedBytes: CopyEngine.chunkSize),
    ])
    func sourceThatShrinksDuringTheCopyIsRecordedAsCopied(keep: Int, expectedBytes: Int) async throws {
        try await withTemporaryDirectory { dir in
            let bytes = randomBytes(3 * CopyEngine.chunkSize, seed: 14)
            let source = try writeFile(dir + "/source.bin", bytes)
            let shrink = AfterFirstChunk { _ in _ = try System.call("truncate") { truncate(source, off_t(keep)) } }
            let copy = dir + "/copy.bin"
            let result = try engine(progress: { shrink($0) }).copyFile(from: source, to: .init(path: copy))
            #expect(shrink.failure.withLock { $0 } == nil)
            #expect(result.bytes == Int64(expectedBytes))
            #expect(try size(ofFile: copy) == Int64(expectedBytes))
            #expect(result.sha256 == SHA256.hash(Array(bytes.prefix(expectedBytes))))
            #expect(try sha256sum(copy) == result.sha256)
        }
    }

    @Test func cancelledShareStopsTheCopyAndRemovesIt() async throws {
        try await withTemporaryDirectory { dir in
            let source = try writeFile(dir + "/source.bin", randomBytes(4 * CopyEngine.chunkSize, seed: 15))
            let share = CopyEngine.ShareState()
            let cancel = AfterFirstChunk { _ in share.cancelled.store(true, ordering: .relaxed) }
            let engine = CopyEngine(maxFileSize: 1 << 40, maxShareSize: 1 << 40, share: share) { cancel($0) }
            do {
                _ = try engine.copyFile(from: source, to: .init(path: dir + "/copy.bin"))
                Issue.record("the copy went on after the share was cancelled")
            } catch let error as ShareError {
                #expect(error.code == .cancelled)
            }
            #expect(!FileManager.default.fileExists(atPath: dir + "/copy.bin"))
        }
    }

    @Test func copyInFlightIsVisibleInStagingWithItsExpectedSize() async throws {
        try await withTemporaryDirectory { dir in
            let total = 3 * CopyEngine.chunkSize
            let source = try writeFile(dir + "/source.bin", randomBytes(total, seed: 16))
            let spool = try Spool(root: dir + "/state")
            let seen = Mutex<[[CopyInFlight]]>([])
            var configuration = LoaderConfiguration()
            configuration.concurrency = 1
            configuration.progress = { _, _ in
                let copies = (try? spool.copiesInFlight()) ?? []
                seen.withLock { $0.append(copies) }
            }
            let receipt = await ShareLoader(spool: spool, configuration: configuration)
                .load([FileItemProvider(path: source, types: ["public.data"])])
            #expect(receipt.status == .complete)
            let snapshots = seen.withLock { $0 }
            #expect(snapshots.count == 3)
            #expect(snapshots.map { $0.map(\.bytesDone) } == (1...3).map { [Int64($0 * CopyEngine.chunkSize)] })
            #expect(snapshots.allSatisfy { $0.map(\.bytesTotal) == [Int64(total)] })
            #expect(snapshots.allSatisfy { $0.map(\.shareId) == [receipt.shareId] })
            // Published and unlocked: nothing is in flight any more.
            #expect(try spool.copiesInFlight().isEmpty)
        }
    }

    @Test func shareCancelledWhileCopyingIsRolledBackAndRecorded() async throws {
        try await withTemporaryDirectory { dir in
            let small = try writeFile(dir + "/small.txt", "copied before the cancel")
            let large = try writeFile(dir + "/large.bin", randomBytes(4 * CopyEngine.chunkSize, seed: 17))
            let spool = try Spool(root: dir + "/state")
            let canceller = Canceller()
            var configuration = LoaderConfiguration()
            configuration.concurrency = 1
            // Cancelled once the large attachment's first chunk is copied: the small one is done by then.
            configuration.progress = { index, _ in if index == 1 { canceller.cancel() } }
            let loader = ShareLoader(spool: spool, configuration: configuration)
            let task = Task {
                await loader.load([
                    FileItemProvider(path: small, types: ["public.plain-text"]),
                    FileItemProvider(path: large, types: ["public.data"]),
                ])
            }
            canceller.hold(task)
            let receipt = await task.value
            #expect(receipt.status == .failed)
            #expect(receipt.error?.code == .cancelled)
            #expect(receipt.attachments.map(\.status) == [.rolledBack, .failed])
            #expect(receipt.codes == [nil, "ERR_CANCELLED"])
            #expect(try spool.shareIDs(in: .staging).isEmpty)
            #expect(try spool.shareIDs(in: .incoming).isEmpty)
            let status = try spool.status()
            #expect(status.rejected == 1)
            #expect(status.staging == 0 && status.incoming == 0)
        }
    }
}
