import Foundation
import Synchronization
import Testing

@testable import sharepipe

/// Runs a shell (or any program) with arguments; the result as for `runSharepipe`.
private func runProgram(_ path: String, _ arguments: [String], environment: [String: String] = [:]) throws
    -> ProcessResult
{
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
    let output = Pipe()
    let errors = Pipe()
    process.standardOutput = output
    process.standardError = errors
    process.standardInput = FileHandle.nullDevice
    try launchSerially(process)
    // Both pipes are drained before waiting, so a chatty program never blocks on a full pipe.
    let errorData = Mutex<Data>(Data())
    let drained = DispatchSemaphore(value: 0)
    DispatchQueue.global().async {
        let data = errors.fileHandleForReading.readDataToEndOfFile()
        errorData.withLock { $0 = data }
        drained.signal()
    }
    let outputData = output.fileHandleForReading.readDataToEndOfFile()
    drained.wait()
    process.waitUntilExit()
    return ProcessResult(
        status: process.terminationStatus, stdoutData: outputData, stderrData: errorData.withLock { $0 })
}

private func installed(_ program: String) -> Bool {
    FileManager.default.isExecutableFile(atPath: "/usr/bin/" + program)
}

/// The shell completion scripts and the man page, generated from the command definitions: they load in their
/// shells, offer what `--help` lists, and the page renders without a warning.
@Suite(.timeLimit(.minutes(5))) struct CompletionAndManPageTests {
    static let tree = CommandTree(.sharepipe)

    /// Writes `sharepipe completions SHELL` (or `manpage`) into `dir` and returns its path.
    func generated(_ arguments: [String], in dir: String, name: String) async throws -> String {
        let result = try await runSharepipe(arguments)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.isEmpty)
        return try writeFile(dir + "/" + name, result.stdout)
    }

    @Test func bashScriptParsesAndCompletesCommandsOptionsAndValues() async throws {
        try await withTemporaryDirectory { dir in
            let script = try await generated(["completions", "bash"], in: dir, name: "sharepipe.bash")
            let syntax = try runProgram("/bin/bash", ["-n", script])
            #expect(syntax.status == 0, "\(syntax.stderr)")
            // One completion per line: the words typed so far (the last one is being completed) and the reply.
            var cases: [(words: [String], reply: String)] = [
                (["da"], "daemon"), (["daemon", "--proc"], "--processor"),
                (["daemon", "--processor", ""], "store exec discard"), (["types", "s"], "show sniff"),
                (["ls", "--re"], "--rejected"), (["completions", ""], "bash zsh fish"), (["help", "sta"], "status"),
                (["daemon", "--store-"], "--store-path"),
                ([""], Self.tree.groups[0].children.map { $0.name }.joined(separator: " ") + " help --help --version"),
            ]
            // Every command offers exactly the options its --help lists.
            for entry in Self.tree.commands {
                let options = entry.command.options.map { "--" + $0.spec.name } + ["--help"]
                cases.append((entry.path + ["--"], options.joined(separator: " ")))
            }
            var driver = "source \(script.debugDescription)\n"
            for (words, _) in cases {
                let quoted = (["sharepipe"] + words).map { "'\($0)'" }.joined(separator: " ")
                driver += "COMP_WORDS=(\(quoted)); COMP_CWORD=\(words.count); COMPREPLY=(); _sharepipe; "
                    + "echo \"${COMPREPLY[*]}\"\n"
            }
            let result = try runProgram("/bin/bash", ["-c", driver])
            #expect(result.status == 0, "\(result.stderr)")
            let replies = result.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            for (index, (words, reply)) in cases.enumerated() {
                #expect(replies.indices.contains(index) && replies[index] == reply, "completing \(words)")
            }
            // Directory values complete to directories only.
            try FileManager.default.createDirectory(atPath: dir + "/inbox-dir", withIntermediateDirectories: true)
            let directories = try runProgram("/bin/bash", [
                "-c", "source \(script.debugDescription); cd \(dir.debugDescription); "
                    + "COMP_WORDS=(sharepipe daemon --inbox '') COMP_CWORD=3; _sharepipe; echo \"${COMPREPLY[*]}\"",
            ])
            #expect(directories.stdout == "inbox-dir\n")
        }
    }

    @Test(.enabled(if: installed("zsh"), "zsh is not installed (apt-get install zsh)"))
    func zshScriptParsesAndRegistersItself() async throws {
        try await withTemporaryDirectory { dir in
            let script = try await generated(["completions", "zsh"], in: dir, name: "_sharepipe")
            #expect(try String(contentsOfFile: script, encoding: .utf8).hasPrefix("#compdef sharepipe\n"))
            let syntax = try runProgram("/usr/bin/zsh", ["-n", script])
            #expect(syntax.status == 0, "\(syntax.stderr)")
            let loaded = try runProgram("/usr/bin/zsh", [
                "-f", "-c", "autoload -Uz compinit; compinit -u -d \(dir)/zcompdump; source \(script); "
                    + "print -r -- $_comps[sharepipe]",
            ])
            #expect(loaded.stdout == "_sharepipe\n", "\(loaded.stderr)")
        }
    }

    @Test(.enabled(if: installed("fish"), "fish is not installed (apt-get install fish)"))
    func fishScriptParsesAndCompletes() async throws {
        try await withTemporaryDirectory { dir in
            let script = try await generated(["completions", "fish"], in: dir, name: "sharepipe.fish")
            let syntax = try runProgram("/usr/bin/fish", ["-n", script])
            #expect(syntax.status == 0, "\(syntax.stderr)")
            let cases = [
                ("sharepipe da", ["daemon"]), ("sharepipe daemon --processor ", ["discard", "exec", "store"]),
                ("sharepipe types s", ["show", "sniff"]), ("sharepipe purge --rej", ["--rejected"]),
            ]
            for (line, expected) in cases {
                let result = try runProgram(
                    "/usr/bin/fish", ["--no-config", "-c", "source \(script); complete -C '\(line)'"],
                    environment: ["HOME": dir, "XDG_CONFIG_HOME": dir, "XDG_DATA_HOME": dir])
                let words = result.stdout.split(separator: "\n").map { String($0.prefix { $0 != "\t" }) }
                #expect(words.sorted() == expected, "completing \(line.debugDescription): \(result.stderr)")
            }
        }
    }

    @Test func manPageRendersWithoutWarningsAndListsEveryCommandAndOption() async throws {
        try await withTemporaryDirectory { dir in
            let page = try await generated(["manpage"], in: dir, name: "sharepipe.1")
            let rendered = try runProgram(
                "/usr/bin/man", ["--warnings", "-l", page], environment: ["MANWIDTH": "200", "LC_ALL": "C.UTF-8"])
            #expect(rendered.status == 0)
            #expect(rendered.stderr.isEmpty, "\(rendered.stderr)")
            let text = rendered.stdout.replacingOccurrences(of: "\u{2010}", with: "-")
            for entry in Self.tree.commands {
                #expect(text.contains("sharepipe " + entry.path.joined(separator: " ")), "\(entry.path)")
                for spec in entry.command.options.map(\.spec) {
                    #expect(text.contains("--" + spec.name), "\(entry.path): --\(spec.name)")
                }
            }
            #expect(!text.contains("manpage"), "the hidden command stays out of the page")
            for section in ["NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "EXIT STATUS", "ENVIRONMENT", "FILES"] {
                #expect(text.contains("\n" + section + "\n"), "\(section)")
            }
        }
    }
}
