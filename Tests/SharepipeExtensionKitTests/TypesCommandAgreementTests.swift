import Foundation
import SharepipeCore
import SharepipeExtensionKit
import Testing

/// `sharepipe types show --json` for every built-in type, compared with what `UTType` says.
@Suite(.timeLimit(.minutes(5)))
struct TypesCommandAgreementTests {
    /// The JSON `types show --json` prints.
    private struct Shown: Decodable {
        var identifier: String
        var parents: [String]
        var supertypes: [String]
        var filenameExtensions: [String]
        var mimeTypes: [String]
        var dynamic: Bool
    }

    @Test func sharepipeTypesAndUTTypeAgreeOnEveryBuiltinType() async throws {
        let binary = try sharepipeBinary()
        let identifiers = TypeRegistry.standard.allDeclarations.map(\.identifier)
        #expect(identifiers.count > 200)
        var disagreements: [String] = []
        // A few processes at a time: enough to be quick, few enough for a loaded 2-core machine.
        let batches = stride(from: 0, to: identifiers.count, by: 8).map {
            Array(identifiers[$0..<min($0 + 8, identifiers.count)])
        }
        for batch in batches {
            let shown = try await withThrowingTaskGroup(of: (String, Shown).self) { group in
                for identifier in batch {
                    group.addTask { (identifier, try await Self.onOwnThread { try Self.show(identifier, binary: binary) }) }
                }
                return try await group.reduce(into: [(String, Shown)]()) { $0.append($1) }
            }
            for (identifier, cli) in shown {
                disagreements += Self.compare(identifier, cli)
            }
        }
        #expect(disagreements.isEmpty, "\(disagreements.joined(separator: "\n"))")
    }

    private static func compare(_ identifier: String, _ cli: Shown) -> [String] {
        guard let type = UTType(identifier) else { return ["\(identifier): UTType(_:) gives nil"] }
        var found: [String] = []
        func check(_ what: String, _ fromCLI: some Equatable & CustomStringConvertible,
                   _ fromKit: some Equatable & CustomStringConvertible) {
            if "\(fromCLI)" != "\(fromKit)" {
                found.append("\(identifier) \(what): sharepipe \(fromCLI), UTType \(fromKit)")
            }
        }
        check("identifier", cli.identifier, type.identifier)
        check("dynamic", cli.dynamic, type.isDynamic)
        check("supertypes", cli.supertypes.sorted(), type.supertypes.map(\.identifier).sorted())
        for parent in cli.parents where !(UTType(parent).map(type.supertypes.contains) ?? false) {
            found.append("\(identifier) parent \(parent): not among UTType's supertypes \(type.supertypes)")
        }
        check("preferred extension", cli.filenameExtensions.first ?? "none", type.preferredFilenameExtension ?? "none")
        let preferredMIME = cli.mimeTypes.first { !$0.hasSuffix("/*") } ?? "none"
        check("preferred MIME type", preferredMIME, type.preferredMIMEType ?? "none")
        check("extensions", cli.filenameExtensions, type.tags[.filenameExtension] ?? [])
        check("MIME types", cli.mimeTypes, type.tags[.mimeType] ?? [])
        return found
    }

    /// Runs `body` on a thread of its own: waiting for a process never holds a thread of the cooperative pool, which
    /// is as wide as the machine has cores and runs every other test too.
    private static func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
        }
    }

    private static func show(_ identifier: String, binary: String) throws -> Shown {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["types", "show", "--json", identifier]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try launchLock.withLock { try process.run() }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw SupportError("sharepipe types show \(identifier) exited \(process.terminationStatus)")
        }
        return try JSONDecoder().decode(Shown.self, from: data)
    }

    /// `$SHAREPIPE_BINARY`, else the `sharepipe` built next to the test binary.
    private func sharepipeBinary() throws -> String {
        if let path = ProcessInfo.processInfo.environment["SHAREPIPE_BINARY"], !path.isEmpty { return path }
        var directory = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent("sharepipe").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            directory.deleteLastPathComponent()
        }
        throw SupportError("cannot find the built sharepipe binary next to the tests; set SHAREPIPE_BINARY")
    }
}

/// Foundation's `Process.run` is not safe to call from several threads at once: launches take turns.
private let launchLock = NSLock()
