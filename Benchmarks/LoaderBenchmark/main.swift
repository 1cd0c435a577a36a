// Copies a 1 GiB file through the loader and with `cp` in one run; prints throughputs, ratios and the loader's
// peak RSS. A benchmark, never a pass/fail test.
//
//     swift run -c release LoaderBenchmark [--size-mib N] [--dir DIR]
import Foundation
import Glibc
import SharepipeCore

func seconds(_ body: () throws -> Void) rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

func shell(_ command: String) -> Int32 {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/sh")
    process.arguments = ["-c", command]
    try? process.run()
    process.waitUntilExit()
    return process.terminationStatus
}

let arguments = CommandLine.arguments
// Child mode: load one file through the loader, so the parent can read this process's peak RSS alone.
if arguments.count == 4 && arguments[1] == "--child" {
    let spool = try Spool(root: arguments[3])
    var configuration = LoaderConfiguration()
    configuration.maxFileSize = 1 << 40
    configuration.maxShareSize = 1 << 40
    configuration.minFreeBytes = 0
    let receipt = await ShareLoader(spool: spool, configuration: configuration)
        .load([FileItemProvider(path: arguments[2], types: ["public.data"])])
    exit(receipt.status == .complete ? 0 : 1)
}

var sizeMiB = 1024
var directory = FileManager.default.currentDirectoryPath + "/.build/loader-benchmark"
var index = 1
while index < arguments.count {
    switch arguments[index] {
    case "--size-mib": sizeMiB = Int(arguments[index + 1]) ?? sizeMiB
    case "--dir": directory = arguments[index + 1]
    default: break
    }
    index += 2
}
try? FileManager.default.removeItem(atPath: directory)
try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(atPath: directory) }

let source = directory + "/source.bin"
var block = [UInt8](repeating: 0, count: 1 << 20)
var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
for i in block.indices {
    seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
    block[i] = UInt8(truncatingIfNeeded: seed >> 33)
}
_ = FileManager.default.createFile(atPath: source, contents: nil)
let handle = FileHandle(forWritingAtPath: source)!
for _ in 0..<sizeMiB { handle.write(Data(block)) }
try handle.synchronize()
try handle.close()
_ = shell("cat '\(source)' > /dev/null")
let bytes = Double(sizeMiB) * 1_048_576

func runCp(durable: Bool, source: String, directory: String) -> Double {
    let target = directory + "/cp-\(UUID().uuidString)"
    let time = seconds { _ = shell("cp '\(source)' '\(target)'" + (durable ? " && sync '\(target)'" : "")) }
    try? FileManager.default.removeItem(atPath: target)
    return time
}

func runLoader(executable: String, source: String, directory: String) -> (Double, Int) {
    runChild(executable: executable, source: source, directory: directory)
}

func runChild(executable: String, source: String, directory: String) -> (Double, Int) {
    let state = directory + "/state-\(UUID().uuidString)"
    var pid: pid_t = 0
    let argv: [UnsafeMutablePointer<CChar>?] = [executable, "--child", source, state].map { (text: String) in strdup(text) } + [nil]
    defer { argv.forEach { free($0) } }
    let start = DispatchTime.now().uptimeNanoseconds
    guard posix_spawn(&pid, executable, nil, nil, argv, environ) == 0 else { fatalError("spawn failed") }
    var status: Int32 = 0
    var usage = rusage()
    wait4(pid, &status, 0, &usage)
    let time = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    try? FileManager.default.removeItem(atPath: state)
    guard status == 0 else { fatalError("loader child failed with status \(status)") }
    return (time, usage.ru_maxrss)
}

var cpTimes: [Double] = []
var durableCpTimes: [Double] = []
var loaderTimes: [Double] = []
var peakRSS = 0
// Each run starts with no dirty pages from the previous one, so none pays for another's writeback.
for _ in 0..<3 {
    _ = shell("sync")
    cpTimes.append(runCp(durable: false, source: source, directory: directory))
    _ = shell("sync")
    durableCpTimes.append(runCp(durable: true, source: source, directory: directory))
    _ = shell("sync")
    let (time, rss) = runLoader(executable: arguments[0], source: source, directory: directory)
    loaderTimes.append(time)
    peakRSS = max(peakRSS, rss)
}
let cp = cpTimes.min()!
let durableCp = durableCpTimes.min()!
let loader = loaderTimes.min()!
func rate(_ time: Double) -> String { String(format: "%7.0f MiB/s", bytes / time / 1_048_576) }
print("1 GiB attachment (\(sizeMiB) MiB, best of 3, page cache warm)")
print("  cp                      \(rate(cp))")
print("  cp + fsync (sync FILE)  \(rate(durableCp))")
print("  sharepipe loader        \(rate(loader))   (copy_file_range + SHA-256 + libmagic + fsync + publish)")
print(String(format: "  ratio loader / cp            %.2fx", cp / loader))
print(String(format: "  ratio loader / cp + fsync    %.2fx", durableCp / loader))
let tiny = directory + "/tiny.txt"
_ = FileManager.default.createFile(atPath: tiny, contents: Data("tiny".utf8))
let (_, baselineRSS) = runChild(executable: arguments[0], source: tiny, directory: directory)
print("  loader peak RSS         \(peakRSS / 1024) MiB (whole process, ru_maxrss)")
print("  same process, 4-byte file  \(baselineRSS / 1024) MiB  -> the 1 GiB copy itself adds \((peakRSS - baselineRSS) / 1024) MiB")
