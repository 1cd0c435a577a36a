// `sharepipe share` of one large attachment and of a share of many attachments, against `cp` followed by `sync`
// of the same files on the same file system, in interleaved rounds; prints throughputs, ratios and the share
// process's peak RSS. A benchmark, never a pass/fail test.
//
//     swift run -c release LoaderBenchmark [--size-mib N] [--count N] [--each-mib N] [--rounds N] [--dir DIR]
//                                          [--binary PATH]
//
// Defaults: one 1024 MiB attachment, 20 attachments of 100 MiB, 3 rounds, ./.build/loader-benchmark, and the
// `sharepipe` next to this executable.
import Foundation
import Glibc

var sizeMiB = 1024
var count = 20
var eachMiB = 100
var rounds = 3
var directory = FileManager.default.currentDirectoryPath + "/.build/loader-benchmark"
var binary = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path + "/sharepipe"
var index = 1
let arguments = CommandLine.arguments
while index + 1 < arguments.count {
    let value = arguments[index + 1]
    switch arguments[index] {
    case "--size-mib": sizeMiB = Int(value) ?? sizeMiB
    case "--count": count = Int(value) ?? count
    case "--each-mib": eachMiB = Int(value) ?? eachMiB
    case "--rounds": rounds = Int(value) ?? rounds
    case "--dir": directory = value
    case "--binary": binary = value
    default: fatalError("unknown argument \(arguments[index])")
    }
    index += 2
}

/// What one timed run cost.
struct Run {
    var seconds: Double
    /// Peak RSS of the process run, in KiB (0 for shell pipelines).
    var peakKiB: Int
}

/// Spawns `argv` directly (no shell, so ru_maxrss is the program's own), waits, and times it.
func spawn(_ argv: [String], output: String = "/dev/null") -> Run {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    posix_spawn_file_actions_addopen(&actions, 2, output + ".stderr", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    let pointers: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
    defer { pointers.forEach { free($0) } }
    var pid: pid_t = 0
    let start = DispatchTime.now().uptimeNanoseconds
    guard posix_spawn(&pid, argv[0], &actions, nil, pointers, environ) == 0 else { fatalError("spawn \(argv[0])") }
    var status: Int32 = 0
    var usage = rusage()
    wait4(pid, &status, 0, &usage)
    let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    guard status == 0 else { fatalError("\(argv.joined(separator: " ")) failed with status \(status)") }
    return Run(seconds: seconds, peakKiB: usage.ru_maxrss)
}

func shell(_ command: String) -> Run {
    spawn(["/bin/sh", "-c", command])
}

/// A file of pseudo-random bytes (incompressible, so no layer of the stack can shortcut it).
func makeFile(_ path: String, mebibytes: Int, seed: UInt64) {
    var block = [UInt8](repeating: 0, count: 1 << 20)
    var state = seed
    let handle = FileHandle(forWritingAtPath: path) ?? {
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        return FileHandle(forWritingAtPath: path)!
    }()
    for _ in 0..<mebibytes {
        for i in stride(from: 0, to: block.count, by: 8) {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            withUnsafeBytes(of: state) { block.replaceSubrange(i..<i + 8, with: $0) }
        }
        handle.write(Data(block))
    }
    try? handle.close()
}

try? FileManager.default.removeItem(atPath: directory)
try FileManager.default.createDirectory(atPath: directory + "/many", withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(atPath: directory) }
let single = directory + "/single.bin"
makeFile(single, mebibytes: sizeMiB, seed: 1)
let many = (0..<count).map { directory + "/many/part-\($0).bin" }
for (number, path) in many.enumerated() { makeFile(path, mebibytes: eachMiB, seed: UInt64(number + 2)) }
// Sources in the page cache and nothing dirty: every run reads from memory and writes its own bytes only.
_ = shell("cat '\(directory)'/single.bin '\(directory)'/many/* > /dev/null; sync")

/// One case: the same files copied by `cp` + `sync` and shared by `sharepipe share`, alternating.
struct Case {
    var name: String
    var files: [String]
    var mebibytes: Int
    var cp: [Double] = []
    var durableCp: [Double] = []
    var share: [Double] = []
    var peakKiB = 0
}

@MainActor func runRound(_ item: inout Case) {
    let target = directory + "/cp-target"
    try? FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: true)
    let quoted = item.files.map { "'\($0)'" }.joined(separator: " ")
    _ = shell("sync")
    item.cp.append(shell("cp \(quoted) '\(target)/'").seconds)
    _ = shell("rm -rf '\(target)'; sync")
    try? FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: true)
    item.durableCp.append(shell("cp \(quoted) '\(target)/' && sync '\(target)'/*").seconds)
    _ = shell("rm -rf '\(target)'; sync")
    // A spool that exists already, as for a user who shares more than once: the run pays for the process, the
    // ledger, libmagic, the copies, their hashes, fsyncs and the publish, not for creating the state directory.
    let state = directory + "/state"
    let run = spawn([binary, "share", "--state", state, "--json"] + item.files.map { $0 + "=public.data" },
        output: directory + "/receipt.json")
    let receipt = (try? String(contentsOfFile: directory + "/receipt.json", encoding: .utf8)) ?? ""
    guard receipt.contains("\"status\" : \"complete\"") else { fatalError("sharepipe share did not complete") }
    item.share.append(run.seconds)
    item.peakKiB = max(item.peakKiB, run.peakKiB)
    _ = shell("rm -rf '\(state)/incoming'/*; sync")
}

let tiny = directory + "/tiny.txt"
_ = FileManager.default.createFile(atPath: tiny, contents: Data("tiny".utf8))
let baseline = spawn([binary, "share", "--state", directory + "/state", tiny], output: directory + "/tiny.out")

var cases = [
    Case(name: "1 attachment of \(sizeMiB) MiB", files: [single], mebibytes: sizeMiB),
    Case(name: "\(count) attachments of \(eachMiB) MiB", files: many, mebibytes: count * eachMiB),
]
for _ in 0..<rounds {
    for number in cases.indices { runRound(&cases[number]) }
}

func rate(_ mebibytes: Int, _ seconds: Double) -> String { String(format: "%7.0f MiB/s", Double(mebibytes) / seconds) }
print("sharepipe share vs cp + sync (best of \(rounds) interleaved rounds, sources in the page cache)")
for item in cases {
    let cp = item.cp.min()!, durableCp = item.durableCp.min()!, share = item.share.min()!
    print("\(item.name)")
    print("  cp                      \(rate(item.mebibytes, cp))")
    print("  cp + sync FILES         \(rate(item.mebibytes, durableCp))")
    print("  sharepipe share         \(rate(item.mebibytes, share))   (copy, hash, sniff, fsync, ledger, publish)")
    print(String(format: "  ratio share / cp + sync      %.2fx", durableCp / share))
    print("  share peak RSS          \(item.peakKiB / 1024) MiB")
    let rounds = zip(item.durableCp, item.share).map { String(format: "%.2f/%.2f s", $0, $1) }
    print("  rounds (cp + sync / share): \(rounds.joined(separator: ", "))")
}
print("4-byte share peak RSS     \(baseline.peakKiB / 1024) MiB")
