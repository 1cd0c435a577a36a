import Foundation
@testable import SharepipeExtensionKit
import Testing

/// The variable's stand-in is process-global: these tests run one at a time and clear it. (Never `setenv`: other
/// tests start processes meanwhile, which copy the environment `setenv` may be moving.)
@Suite(.serialized)
struct AppGroupContainerTests {
    /// Runs `body` with `SHAREPIPE_APP_GROUP_CONTAINERS` read as `value` (unset when nil).
    private func withContainers<T>(_ value: String?, _ body: () throws -> T) rethrows -> T {
        AppGroupContainers.variableStandIn.withLock { $0 = .some(value) }
        defer { AppGroupContainers.variableStandIn.withLock { $0 = nil } }
        return try body()
    }

    @Test func containerIsNilWhenTheVariableIsUnsetOrEmpty() {
        for value in [nil, ""] {
            let container = withContainers(value) {
                FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: "group.kit.a")
            }
            #expect(container == nil, "\(value.debugDescription)")
        }
    }

    @Test func containerIsCreatedOnFirstUseUnderTheVariable() throws {
        let directory = try TemporaryDirectory()
        let root = directory.url.appendingPathComponent("groups")
        let container = try #require(withContainers(root.path) {
            FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: "group.kit.b")
        })
        #expect(container.standardizedFileURL.path == root.appendingPathComponent("group.kit.b").path)
        var isDirectory: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: container.path, isDirectory: &isDirectory))
        #expect(isDirectory.boolValue)
        try Data("kept".utf8).write(to: container.appendingPathComponent("note"))
        let again = withContainers(root.path) {
            FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: "group.kit.b")
        }
        #expect(again == container)
        let note = container.appendingPathComponent("note").path
        #expect(FileManager.default.contents(atPath: note) == Data("kept".utf8))
    }

    @Test func groupIdentifiersThatAreNotOneNameGetNoContainer() throws {
        let directory = try TemporaryDirectory()
        for identifier in ["", ".", "..", "../escape", "group/a"] {
            let container = withContainers(directory.url.path) {
                FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: identifier)
            }
            #expect(container == nil, "\(identifier.debugDescription)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path).isEmpty)
    }
}
