// Drop -> processed latency of `sharepipe daemon --processor discard` over single drops made one at a time, then
// the CPU time the daemon spends while idle. A benchmark, never a pass/fail test; it drives the built binary only.
//
//     swift build -c release
//     .build/release/LatencyBenchmark [--binary .build/release/sharepipe] [--drops 500] [--settle 250]
//         [--idle-seconds 60] [--dir DIR]
//
// A drop is a small text file written beside the inbox and renamed into it; its clock starts just before the
// rename. It counts as processed once the source is gone from the inbox (its share was published) and both
// `incoming` and `processing` are empty again (the share was claimed, processed and its directory removed). Those
// are polled every 0.5 ms with stat/readdir, which never touch what the daemon's inotify watches, so a latency is
// late by 0.25 ms on average. Idle CPU is utime + stime from /proc/PID/stat (10 ms ticks, every thread) and, finer,
// the on-CPU nanoseconds of /proc/PID/task/*/schedstat (threads alive at the end), plus the context switches that
// show how often the daemon wakes.
import Foundation
import Glibc

struct Options {
    var binary = FileManager.default.currentDirectoryPath + "/.build/release/sharepipe"
    var drops = 500
    var settleMilliseconds = 250
    var idleSeconds = 60
    var directory = FileManager.default.currentDirectoryPath + "/.build/latency-benchmark"

    init(_ arguments: [String]) {
        var index = 1
        while index + 1 < arguments.count {
            let value = arguments[index + 1]
            switch arguments[index] {
            case "--binary": binary = value
            case "--drops": drops = Int(value) ?? drops
            case "--settle": settleMilliseconds = Int(value) ?? settleMilliseconds
            case "--idle-seconds": idleSeconds = Int(value) ?? idleSeconds
            case "--dir": directory = value
            default: fail("unknown option \(arguments[index])")
            }
            index += 2
        }
        if index < arguments.count { fail("option \(arguments[index]) needs a value") }
    }
}

/// The daemon under test, once started; `fail` stops it so that it never outlives the benchmark.
nonisolated(unsafe) var daemonPID: Int32?

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data(("LatencyBenchmark: " + message + "\n").utf8))
    if let daemonPID { kill(daemonPID, SIGKILL) }
    exit(1)
}

func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

/// Whether a directory has no entries besides `.` and `..`.
func isEmptyDirectory(_ path: String) -> Bool {
    guard let directory = opendir(path) else { return false }
    defer { closedir(directory) }
    while let entry = readdir(directory) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        if name != "." && name != ".." { return false }
    }
    return true
}

func readText(_ path: String) -> String {
    (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
}

/// CPU use of a process so far, in total and per live thread.
struct CPUSample {
    /// utime + stime, in clock ticks, threads that ended included.
    var ticks: Int
    /// Per live thread id: on-CPU nanoseconds (schedstat) and voluntary plus involuntary context switches.
    var threads: [String: (runNanoseconds: Int, switches: Int)] = [:]

    init(pid: Int32) {
        let stat = readText("/proc/\(pid)/stat")
        // Fields after the parenthesised command name: state is field 3, utime 14, stime 15.
        let fields = stat[(stat.lastIndex(of: ")").map { stat.index(after: $0) } ?? stat.startIndex)...]
            .split(separator: " ")
        ticks = fields.count > 12 ? (Int(fields[11]) ?? 0) + (Int(fields[12]) ?? 0) : 0
        for task in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? [] {
            let schedstat = readText("/proc/\(pid)/task/\(task)/schedstat").split(separator: " ")
            var switches = 0
            for line in readText("/proc/\(pid)/task/\(task)/status").split(separator: "\n")
            where line.hasPrefix("voluntary_ctxt_switches:") || line.hasPrefix("nonvoluntary_ctxt_switches:") {
                switches += Int(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) ?? 0
            }
            threads[task] = (schedstat.first.flatMap { Int($0) } ?? 0, switches)
        }
    }

    /// What the threads alive now did since `earlier` (a thread born since then counts from zero). Threads that
    /// ended in between are missing, so this is a lower bound; `ticks` has them.
    func threadDelta(since earlier: CPUSample) -> (runNanoseconds: Int, switches: Int, born: Int, ended: Int) {
        var run = 0
        var switches = 0
        for (task, now) in threads {
            let before = earlier.threads[task] ?? (0, 0)
            run += now.runNanoseconds - before.runNanoseconds
            switches += now.switches - before.switches
        }
        let born = threads.keys.filter { earlier.threads[$0] == nil }.count
        let ended = earlier.threads.keys.filter { threads[$0] == nil }.count
        return (run, switches, born, ended)
    }
}

func percentile(_ sorted: [Double], _ fraction: Double) -> Double {
    let rank = Int((fraction * Double(sorted.count)).rounded(.up))
    return sorted[min(max(rank, 1), sorted.count) - 1]
}

func milliseconds(_ value: Double) -> String {
    String(format: "%.1f ms", value)
}

let options = Options(CommandLine.arguments)
guard FileManager.default.isExecutableFile(atPath: options.binary) else {
    fail("no sharepipe binary at \(options.binary) (build it with `swift build -c release`, or pass --binary)")
}
guard options.drops > 0 else { fail("--drops must be positive") }

let root = options.directory
let inbox = root + "/inbox"
let outside = root + "/outside"
let state = root + "/state"
try? FileManager.default.removeItem(atPath: root)
for path in [inbox, outside] {
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
}
let logPath = root + "/daemon.log"
_ = FileManager.default.createFile(atPath: logPath, contents: nil)

let daemon = Process()
daemon.executableURL = URL(fileURLWithPath: options.binary)
daemon.arguments = [
    "daemon", "--inbox", inbox, "--state", state, "--processor", "discard",
    "--settle", String(options.settleMilliseconds),
]
daemon.standardInput = FileHandle.nullDevice
daemon.standardOutput = FileHandle.nullDevice
daemon.standardError = FileHandle(forWritingAtPath: logPath)
try daemon.run()
let pid = daemon.processIdentifier
daemonPID = pid

let readyDeadline = monotonicNanoseconds() + 30_000_000_000
while !readText(logPath).contains("event=daemon.ready") {
    guard daemon.isRunning, monotonicNanoseconds() < readyDeadline else {
        fail("the daemon did not get ready: \(readText(logPath))")
    }
    usleep(10_000)
}
print("sharepipe daemon (pid \(pid)) --processor discard --settle \(options.settleMilliseconds)")
print("binary: \(options.binary)")
print("directory: \(root)")

// MARK: latency

var latencies: [Double] = []
latencies.reserveCapacity(options.drops)
let perDropDeadline: UInt64 = 30_000_000_000
for index in 0..<options.drops {
    let name = "drop-\(index).txt"
    let staged = outside + "/" + name
    guard FileManager.default.createFile(atPath: staged, contents: Data("drop number \(index)\n".utf8)) else {
        fail("cannot write \(staged)")
    }
    let start = monotonicNanoseconds()
    guard rename(staged, inbox + "/" + name) == 0 else { fail("rename into the inbox: errno \(errno)") }
    var published = false
    while true {
        if !published { published = access(inbox + "/" + name, F_OK) != 0 }
        if published && isEmptyDirectory(state + "/incoming") && isEmptyDirectory(state + "/processing") { break }
        if monotonicNanoseconds() - start > perDropDeadline {
            fail("drop \(index) not processed within 30 s: \(readText(logPath).suffix(2000))")
        }
        usleep(500)
    }
    latencies.append(Double(monotonicNanoseconds() - start) / 1e6)
    // A short gap, so that every drop meets an idle daemon.
    usleep(20_000)
}
if FileManager.default.fileExists(atPath: inbox + "/.rejected") { fail("some drops were rejected; see \(logPath)") }

let sorted = latencies.sorted()
let settle = Double(options.settleMilliseconds)
let p50 = percentile(sorted, 0.50)
let p99 = percentile(sorted, 0.99)
let mean = latencies.reduce(0, +) / Double(latencies.count)
print("")
print("drop -> processed over \(latencies.count) single drops:")
print("  min \(milliseconds(sorted[0]))  mean \(milliseconds(mean))  max \(milliseconds(sorted[sorted.count - 1]))")
print("  p50 \(milliseconds(p50))  = settle + \(milliseconds(p50 - settle))  (target <= settle + 10 ms: "
    + (p50 - settle <= 10 ? "met" : "missed") + ")")
print("  p99 \(milliseconds(p99))  = settle + \(milliseconds(p99 - settle))  (target <= settle + 50 ms: "
    + (p99 - settle <= 50 ? "met" : "missed") + ")")

// MARK: idle

// Let the last drop's work and any log or ledger write finish before the idle window starts.
sleep(2)
let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))
let before = CPUSample(pid: pid)
let idleStart = monotonicNanoseconds()
sleep(UInt32(options.idleSeconds))
let after = CPUSample(pid: pid)
let idleSeconds = Double(monotonicNanoseconds() - idleStart) / 1e9
let tickMilliseconds = Double(after.ticks - before.ticks) / ticksPerSecond * 1000
let delta = after.threadDelta(since: before)
let runMilliseconds = Double(delta.runNanoseconds) / 1e6
print("")
print(String(
    format: "idle for %.1f s (%d threads at the end, %d started and %d ended meanwhile):", idleSeconds,
    after.threads.count, delta.born, delta.ended))
print(String(
    format: "  CPU time %.0f ms by utime+stime (%.0f ms ticks) = %.3f%% of one core", tickMilliseconds,
    1000 / ticksPerSecond, tickMilliseconds / (idleSeconds * 10)))
print(String(format: "  CPU time of the threads alive at the end: %.2f ms by schedstat", runMilliseconds))
print(String(
    format: "  context switches of those threads: %d = %.1f per second", delta.switches,
    Double(delta.switches) / idleSeconds))

kill(pid, SIGTERM)
daemon.waitUntilExit()
print("")
print("daemon exit status after SIGTERM: \(daemon.terminationStatus)")
try? FileManager.default.removeItem(atPath: root)
