import Foundation
import Testing

/// `ls --rejected` and `purge --rejected` on what a real daemon run refused, and `ls` naming copied attachments
/// only.
@Suite(.timeLimit(.minutes(5))) struct RejectedCommandTests {
    /// A oneshot daemon run over a lying JPEG and a folder holding one: both end up in `.rejected/`.
    func rejectTwo(_ dir: String) async throws -> String {
        let inbox = dir + "/inbox"
        try writeFile(inbox + "/lying.jpg", "this is text, not a JPEG\n")
        try writeFile(inbox + "/album/also-lying.jpg", "more text\n")
        let run = try await runSharepipe([
            "daemon", "--oneshot", "--inbox", inbox, "--state", dir + "/state", "--output", dir + "/out",
        ])
        #expect(run.status == 4, "\(run.stderr)")
        return inbox
    }

    @Test func lsListsRejectionsWithTheirReasonsAndPurgeDeletesThem() async throws {
        try await withTemporaryDirectory { dir in
            let inbox = try await rejectTwo(dir)
            let listed = try await runSharepipe(["ls", "--rejected", "--inbox", inbox, "--json"])
            #expect(listed.status == 0, "\(listed.stderr)")
            let entries = try #require(try listed.jsonObject["rejected"] as? [[String: Any]])
            #expect(Set(entries.compactMap { $0["name"] as? String }) == ["lying.jpg", "album"])
            for entry in entries {
                #expect(Set(entry.keys) == ["name", "kind", "bytes", "rejectedAt", "ageSeconds", "code", "message"])
                #expect(entry["code"] as? String == "ERR_TYPE_MISMATCH")
                #expect((entry["message"] as? String)?.isEmpty == false)
            }
            let album = try #require(entries.first { $0["name"] as? String == "album" })
            #expect(album["kind"] as? String == "folder")
            #expect(album["bytes"] as? Int == "more text\n".utf8.count)

            let human = try await runSharepipe(["ls", "--rejected", "--inbox", inbox])
            #expect(human.stdout.hasPrefix("NAME"))
            #expect(human.stdout.contains("album/") && human.stdout.contains("lying.jpg"))

            // Through the daemon's config file, as an operator of the service would.
            let config = try writeFile(dir + "/sharepipe.json", #"{"inbox": "\#(inbox)"}"#)
            let viaConfig = try await runSharepipe(["ls", "--rejected", "--config", config, "--json"])
            #expect(viaConfig.status == 0, "\(viaConfig.stderr)")
            let viaConfigNames = try #require(try viaConfig.jsonObject["rejected"] as? [[String: Any]])
                .compactMap { $0["name"] as? String }
            #expect(Set(viaConfigNames) == ["lying.jpg", "album"])

            let recent = try await runSharepipe(["purge", "--rejected", "--older-than", "1h", "--inbox", inbox, "--json"])
            #expect(recent.status == 0)
            #expect(try recent.jsonObject["purged"] as? [String] == [])
            #expect(try FileManager.default.contentsOfDirectory(atPath: inbox + "/.rejected").count == 4)

            let all = try await runSharepipe(["purge", "--rejected", "--inbox", inbox])
            #expect(all.status == 0)
            #expect(all.stdout == "purged 2 rejected entries; 0 left in \(inbox)/.rejected\n")
            #expect(try FileManager.default.contentsOfDirectory(atPath: inbox + "/.rejected").isEmpty)
            let empty = try await runSharepipe(["ls", "--rejected", "--inbox", inbox])
            #expect(empty.stdout == "nothing rejected in \(inbox)/.rejected\n")
        }
    }

    @Test func inboxOptionsNeedRejectedAndPurgeNeedsOneTarget() async throws {
        try await withTemporaryDirectory { dir in
            let ls = try await runSharepipe(["ls", "--inbox", dir, "--state", dir])
            #expect(ls.status == 2)
            #expect(ls.stderr.hasPrefix("error: --inbox: only used with --rejected\n"))
            let both = try await runSharepipe(["purge", "--quarantine", "--rejected", "--state", dir])
            #expect(both.status == 2)
            #expect(both.stderr.hasPrefix("error: give --quarantine or --rejected, not both\n"))
            let neither = try await runSharepipe(["purge", "--state", dir])
            #expect(neither.status == 2)
            #expect(neither.stderr.hasPrefix("error: missing --quarantine or --rejected\n"))
        }
    }

    @Test func lsNamesCopiedAttachmentsAndCountsFailedOnes() async throws {
        try await withTemporaryDirectory { dir in
            let state = dir + "/state"
            let lying = try writeFile(dir + "/secret-plan.jpg", "text, not a JPEG\n")
            let shared = try await runSharepipe(["share", "--state", state, fixturePath("files/photo.jpg"), lying])
            #expect(shared.status == 3)
            let json = try await runSharepipe(["ls", "--state", state, "--json"])
            let share = try #require((try json.jsonObject["shares"] as? [[String: Any]])?.first)
            #expect(share["suggestedNames"] as? [String] == ["photo.jpg"])
            #expect(share["failed"] as? Int == 1)
            let human = try await runSharepipe(["ls", "--state", state])
            #expect(human.stdout.contains("photo.jpg (+1 failed)"))
            #expect(!human.stdout.contains("secret-plan"))
        }
    }
}
