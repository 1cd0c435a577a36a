// Drains published one-attachment 4 KiB shares with `discard` and compares the rate with the raw cost of the same
// system calls (claim rename, open and read of the manifest, unlink of the files, directory fsync) on a copy of the
// same tree, measured in the same run: half of the copy before the drain, half after.
//
//     swift run -c release DrainBenchmark [--shares N] [--workers N] [--dir DIRECTORY]

import Foundation
import Glibc
import SharepipeCore

func argument(_ name: String) -> String? {
    let arguments = CommandLine.arguments
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}

func check(_ result: Int32, _ operation: String) {
    if result < 0 {
        FileHandle.standardError.write(Data("\(operation) failed: \(String(cString: strerror(errno)))\n".utf8))
        exit(1)
    }
}

func seconds(since start: ContinuousClock.Instant) -> Double {
    let elapsed = (ContinuousClock.now - start).components
    return Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
}

/// Publishes `count` shares through the loader, a few at a time.
func publish(_ count: Int, into spool: Spool) async {
    let loader = ShareLoader(spool: spool)
    await withTaskGroup(of: Void.self) { group in
        for index in 0..<count {
            if index >= 8 { await group.next() }
            group.addTask {
                var bytes = [UInt8](repeating: 0, count: 4096)
                for position in bytes.indices { bytes[position] = UInt8.random(in: 0...255) }
                let receipt = await loader.load([DataItemProvider(data: Data(bytes), types: ["public.data"])])
                if receipt.status != .complete {
                    FileHandle.standardError.write(Data("publish failed: \(receipt.attachments)\n".utf8))
                    exit(1)
                }
            }
        }
    }
}

/// The shares of the raw copy, each with its file names (listed before anything is timed).
func rawShares(_ root: String) throws -> [(shareID: String, files: [String])] {
    try FileManager.default.contentsOfDirectory(atPath: root + "/incoming").map { shareID in
        (shareID, try FileManager.default.contentsOfDirectory(atPath: root + "/incoming/" + shareID))
    }
}

/// Per share: rename into processing, open and read the manifest, unlink every file, rmdir, fsync processing.
func rawDrain(_ root: String, _ shares: ArraySlice<(shareID: String, files: [String])>) -> Double {
    let incoming = root + "/incoming"
    let processing = root + "/processing"
    let directory = open(processing, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    check(directory, "open")
    defer { close(directory) }
    var buffer = [UInt8](repeating: 0, count: 64 << 10)
    let start = ContinuousClock.now
    for (shareID, files) in shares {
        let claimed = processing + "/" + shareID
        check(rename(incoming + "/" + shareID, claimed), "rename")
        let manifest = open(claimed + "/manifest.json", O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        check(manifest, "open")
        while buffer.withUnsafeMutableBytes({ read(manifest, $0.baseAddress, $0.count) }) > 0 {}
        close(manifest)
        for file in files { check(unlink(claimed + "/" + file), "unlink") }
        check(rmdir(claimed), "rmdir")
        check(fsync(directory), "fsync")
    }
    return seconds(since: start)
}

/// User plus system CPU time of the process so far.
func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
        + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

let count = Int(argument("--shares") ?? "") ?? 10_000
let base = argument("--dir") ?? FileManager.default.temporaryDirectory.path
let work = base + "/sharepipe-drain-benchmark-" + UUID().uuidString
defer { try? FileManager.default.removeItem(atPath: work) }

let spool = try Spool(root: work + "/state")
print("publishing \(count) one-attachment 4 KiB shares (not timed) in \(work)")
await publish(count, into: spool)

let raw = work + "/raw"
try FileManager.default.createDirectory(atPath: raw + "/processing", withIntermediateDirectories: true)
try FileManager.default.copyItem(atPath: spool.path(.incoming), toPath: raw + "/incoming")
// Half of the raw copy is drained before the consumer runs and half after, so that a slow spell of a shared disk
// weighs on both figures; each run starts with nothing dirty, so that none pays for another's writeback.
let shares = try rawShares(raw)
sync()
var rawSeconds = rawDrain(raw, shares[..<(shares.count / 2)])

sync()
let start = ContinuousClock.now
var configuration = ConsumerConfiguration()
configuration.workers = Int(argument("--workers") ?? "") ?? configuration.workers
let cpuBefore = cpuSeconds()
let summary = try await Consumer(spool: spool, processor: DiscardProcessor(), configuration: configuration).drain()
let elapsed = seconds(since: start)
let cpu = cpuSeconds() - cpuBefore
guard summary.processed == count else {
    print("drain processed \(summary.processed) of \(count)")
    exit(1)
}
let rate = Double(count) / elapsed
sync()
rawSeconds += rawDrain(raw, shares[(shares.count / 2)...])
let rawRate = Double(shares.count) / rawSeconds

print(String(format: "raw syscalls:    %6d shares in %7.3f s = %8.0f shares/s", shares.count, rawSeconds, rawRate))
print(String(format: "drain (discard): %6d shares in %7.3f s = %8.0f shares/s, %d workers, %.3f s CPU", count, elapsed,
    rate, configuration.workers, cpu))
print(String(format: "ratio: %.0f%% of the raw rate (target >= 50%%)", 100 * rate / rawRate))
