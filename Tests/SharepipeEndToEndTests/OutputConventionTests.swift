import Foundation
import Testing

@testable import sharepipe

/// The SPEC's output convention, command by command through the built binary: a result on stdout, diagnostics on
/// stderr, and under `--json` an error also on stdout as `{"error": {"code", "message"}}` with the same status.
@Suite(.timeLimit(.minutes(5))) struct OutputConventionTests {
    /// Every command `sharepipe` runs, hidden ones included, as its words.
    static let commands = CommandTree(.sharepipe).commands.map { $0.path.joined(separator: " ") } + ["manpage"]

    /// A state directory with one quarantined share and one published share, an inbox and an output.
    struct Setting {
        var dir: String
        var state: String { dir + "/state" }
        var inbox: String { dir + "/inbox" }
        var output: String { dir + "/out" }
        var quarantined: String

        init(_ dir: String) async throws {
            self.dir = dir
            let state = dir + "/state"
            let first = try await runSharepipe(["share", "--state", state, "--json", fixturePath("files/photo.jpg")])
            quarantined = try #require(try first.jsonObject["shareId"] as? String)
            let failing = try await runSharepipe([
                "consume", "--state", state, "--processor", "exec", "--exec", "exit 3", "--max-attempts", "1",
            ])
            #expect(failing.status == 1)
            #expect(try await runSharepipe(["share", "--state", state, fixturePath("files/notes.txt")]).status == 0)
            try FileManager.default.createDirectory(atPath: dir + "/inbox", withIntermediateDirectories: true)
        }
    }

    /// A command line that works, and text its stdout must hold.
    static func success(_ command: String, _ setting: Setting) throws -> (arguments: [String], stdout: String) {
        let photo = fixturePath("files/photo.jpg")
        let state = ["--state", setting.state]
        switch command {
        case "daemon":
            return (["daemon", "--oneshot", "--inbox", setting.inbox, "--output", setting.output] + state, "")
        case "share": return (["share", photo] + state, "complete, 1 of 1 copied")
        case "activation check":
            return (["activation", "check", "--rule", #"{"NSExtensionActivationSupportsImageWithMaxCount": 1}"#, photo],
                    "activated: ")
        case "types show": return (["types", "show", "public.jpeg"], "public.image")
        case "types conforms": return (["types", "conforms", "public.jpeg", "public.image"], "conforms to")
        case "types for-extension": return (["types", "for-extension", "jpg"], "public.jpeg")
        case "types for-mime": return (["types", "for-mime", "image/png"], "public.png")
        case "types sniff": return (["types", "sniff", photo], "image/jpeg")
        case "consume": return (["consume", "--processor", "discard"] + state, "consumed: 1 processed")
        case "status": return (["status"] + state, "quarantine")
        case "ls": return (["ls"] + state, setting.quarantined)
        case "requeue": return (["requeue", setting.quarantined] + state, "requeued \(setting.quarantined)")
        case "purge": return (["purge", "--quarantine"] + state, "purged 1 quarantined share")
        case "doctor": return (["doctor", "--inbox", setting.inbox] + state, "checks passed")
        case "completions": return (["completions", "bash"], "complete -o filenames")
        case "manpage": return (["manpage"], ".TH SHAREPIPE 1")
        case "show": return (["show", setting.quarantined] + state, setting.quarantined)
        case "events": return (["events"] + state, "event=published")
        case "matrix": return (["matrix", fixturePath("scenarios")], "scenarios:")
        // issue 33
        case "notifications ls": return (["notifications", "ls"] + state, "no deliveries pending or failed")
        case "notifications retry": return (["notifications", "retry"] + state, "retried 0 deliveries")
        default: throw SupportError("no success case for \(command): add one to the table")
        }
    }

    /// A command line that fails at run time (exit 1), and the code it must carry; nil for a command whose only
    /// failures are usage errors or answers (activation check's and types conforms' "no").
    static func failure(_ command: String, _ setting: Setting) -> (arguments: [String], code: String)? {
        let missing = ["--state", setting.dir + "/missing"]
        let blocked = ["--state", fixturePath("files/photo.jpg") + "/state"]
        switch command {
        case "daemon": return (["daemon", "--oneshot", "--inbox", "/proc/sharepipe-inbox"] + missing, "ERR_IO")
        case "share": return (["share", fixturePath("files/photo.jpg")] + blocked, "ERR_CONTAINER_UNAVAILABLE")
        case "types show": return (["types", "show", "com.example.nothing"], "ERR_NOT_FOUND")
        case "types sniff": return (["types", "sniff", setting.dir], "ERR_NOT_REGULAR_FILE")
        case "consume": return (["consume"] + blocked, "ERR_CONTAINER_UNAVAILABLE")
        case "status", "ls": return ([command] + missing, "ERR_CONTAINER_UNAVAILABLE")
        case "requeue": return (["requeue", UUID().uuidString, "--state", setting.state], "ERR_NOT_FOUND")
        case "purge": return (["purge", "--quarantine"] + missing, "ERR_CONTAINER_UNAVAILABLE")
        case "show": return (["show", UUID().uuidString, "--state", setting.state], "ERR_NOT_FOUND")
        case "events": return (["events"] + missing, "ERR_CONTAINER_UNAVAILABLE")
        case "notifications ls": return (["notifications", "ls"] + missing, "ERR_CONTAINER_UNAVAILABLE")
        case "notifications retry":
            return (["notifications", "retry", UUID().uuidString, "--state", setting.state], "ERR_NOT_FOUND")
        default: return nil
        }
    }

    static func takesJSON(_ command: String) -> Bool {
        CommandTree(.sharepipe).commands.first { $0.path.joined(separator: " ") == command }?.command.options
            .contains { $0.spec.name == "json" } ?? false
    }

    @Test(arguments: commands)
    func resultOnStdoutDiagnosticsOnStderr(command: String) async throws {
        try await withTemporaryDirectory { dir in
            let setting = try await Setting(dir)
            let (arguments, expected) = try Self.success(command, setting)
            let result = try await runSharepipe(arguments)
            #expect(result.status == 0, "\(arguments): \(result.stderr)")
            #expect(!result.stderr.contains("error:"), "\(arguments): \(result.stderr)")
            if expected.isEmpty {
                // The daemon has no result to print: everything it says is a log line on stderr.
                #expect(result.stdout.isEmpty, "\(arguments)")
                #expect(result.stderr.contains("event=daemon.oneshot_done"))
            } else {
                #expect(result.stdout.contains(expected), "\(arguments): \(result.stdout)")
            }
        }
    }

    @Test(arguments: commands)
    func jsonResultIsOneDocumentOnStdout(command: String) async throws {
        // `events --json` is a stream: one document per event, per line (JSON Lines).
        guard Self.takesJSON(command), command != "events" else { return }
        try await withTemporaryDirectory { dir in
            let setting = try await Setting(dir)
            let arguments = try Self.success(command, setting).arguments + ["--json"]
            let result = try await runSharepipe(arguments)
            #expect(result.status == 0, "\(arguments): \(result.stderr)")
            #expect(throws: Never.self, "\(arguments): \(result.stdout)") { _ = try result.json }
            #expect(!result.stderr.contains("error:"), "\(arguments): \(result.stderr)")
        }
    }

    @Test(arguments: commands)
    func failureIsOnStderrAndAlsoJSONUnderJSON(command: String) async throws {
        try await withTemporaryDirectory { dir in
            let setting = try await Setting(dir)
            guard let (arguments, code) = Self.failure(command, setting) else { return }
            let human = try await runSharepipe(arguments)
            #expect(human.status == 1, "\(arguments): \(human.stdout)")
            #expect(human.stderr.contains("error: \(code): "), "\(arguments): \(human.stderr)")
            if command == "share" {
                // The share command's result is its receipt, printed even when the share failed.
                #expect(human.stdout.contains("failed, nothing published"))
            } else if command != "daemon" {
                #expect(human.stdout.isEmpty, "\(arguments): \(human.stdout)")
            }
            guard Self.takesJSON(command) else { return }
            let json = try await runSharepipe(arguments + ["--json"])
            #expect(json.status == 1)
            #expect(json.stderr.contains("error: \(code): "))
            let error = try #require(try json.jsonObject["error"] as? [String: Any], "\(arguments): \(json.stdout)")
            #expect(error["code"] as? String == code)
            #expect((error["message"] as? String)?.isEmpty == false)
        }
    }

    @Test(arguments: commands)
    func usageErrorExitsTwoAndIsJSONUnderJSON(command: String) async throws {
        let words = command.split(separator: " ").map(String.init)
        let plain = try await runSharepipe(words + ["--no-such-flag"])
        #expect(plain.status == 2)
        #expect(plain.stdout.isEmpty)
        #expect(plain.stderr.hasPrefix("error: unknown option --no-such-flag\nusage: sharepipe \(command)"))
        guard Self.takesJSON(command) else { return }
        let json = try await runSharepipe(words + ["--no-such-flag", "--json"])
        #expect(json.status == 2)
        let error = try #require(try json.jsonObject["error"] as? [String: Any])
        #expect(error["code"] as? String == "ERR_USAGE")
        #expect(error["message"] as? String == "unknown option --no-such-flag")
    }

    @Test func noCommandPrintsUsageOnStderrAndExitsTwo() async throws {
        for arguments in [[], ["types"], ["activation"]] {
            let result = try await runSharepipe(arguments)
            #expect(result.status == 2, "\(arguments)")
            #expect(result.stdout.isEmpty, "\(arguments)")
            let words = (["sharepipe"] + arguments).joined(separator: " ")
            #expect(result.stderr.hasPrefix("usage: \(words) COMMAND [options]\n"), "\(arguments)")
            #expect(result.stderr.contains("commands:"), "\(arguments)")
        }
        let help = try await runSharepipe(["--help"])
        #expect(help.status == 0 && help.stderr.isEmpty)
        #expect(try await runSharepipe([]).stderr == help.stdout)
    }

    @Test func daemonErrorsNameTheConfiguredPath() async throws {
        try await withTemporaryDirectory { dir in
            let result = try await runSharepipe([
                "daemon", "--oneshot", "--inbox", "/proc/sharepipe-inbox", "--state", dir + "/state",
            ])
            #expect(result.status == 1)
            #expect(result.stderr.contains("error: ERR_IO: cannot create directory /proc/sharepipe-inbox: "))
            let state = try await runSharepipe(["daemon", "--oneshot", "--state", "/proc/sharepipe-state"])
            #expect(state.status == 1)
            #expect(state.stderr.contains("error: ERR_CONTAINER_UNAVAILABLE: "))
            #expect(state.stderr.contains("/proc/sharepipe-state"))
        }
    }

    @Test func aProviderThatDoesNotCallBackIsAnnounced() async throws {
        try await withTemporaryDirectory { dir in
            let scenario = fixturePath("scenarios/never-calls-back.json")
            let result = try await runSharepipe([
                "share", "--state", dir + "/state", "--load-timeout", "4500", "--json", "--scenario", scenario,
            ])
            #expect(result.status == 3)
            #expect(result.stderr == "waiting for attachment 1 (public.png): no callback after 3 s, "
                + "ERR_TIMEOUT in 1.5 s\n")
            #expect(try result.jsonObject["status"] as? String == "partial")
        }
    }
}
