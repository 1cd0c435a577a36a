import Foundation
import Testing

/// Daemons started at the same instant on one fresh state directory: each creates or opens `ledger.sqlite` while
/// the others migrate it, and none may fail with "database is locked".
@Suite(.timeLimit(.minutes(5)))
struct LedgerStartupTests {
    @Test func daemonsStartedTogetherOnAFreshStateAllStart() async throws {
        try await withTemporaryDirectory { dir in
            for round in 0..<3 {
                let inbox = dir + "/inbox-\(round)"
                let state = dir + "/state-\(round)"
                try FileManager.default.createDirectory(atPath: inbox, withIntermediateDirectories: true)
                let daemons = try (0..<6).map { _ in
                    try SharepipeProcess([
                        "daemon", "--inbox", inbox, "--state", state, "--output", dir + "/output", "--oneshot",
                    ])
                }
                for daemon in daemons {
                    let result = try await daemon.waitForExit(timeout: .seconds(60))
                    #expect(result.status == 0, "round \(round): \(result.stderr)")
                    #expect(!result.stderr.contains("database is locked"))
                }
            }
        }
    }
}
