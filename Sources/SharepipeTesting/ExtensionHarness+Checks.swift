import Foundation
import SharepipeCore
import SharepipeScenario
import SharepipeExtensionKit

/// The checks of one extension run, over what the harness saw: the scenario, the providers' load records, the
/// outcomes, the request's endings and the directories.
struct ExtensionChecks {
    let scenario: Scenario
    let providers: [NSItemProvider]
    /// nil when the code did not return.
    let outcomes: [ExtensionOutcome]?
    let endings: [NSExtensionContext.Ending]
    let accepting: [UTType]
    let deadline: Duration
    let container: URL
    let temporary: URL

    private typealias Failure = ExtensionRun.Failure

    func run() -> [ExtensionRun.Failure] {
        finished() + completeRequestOnce() + everyAttachmentAnswered() + firstConformingType()
            + copiedInsideHandler() + copiesReadable() + distinctNames() + insideContainer() + temporaryFilesGone()
    }

    // MARK: Naming

    /// `attachment 1 ("IMG_0001.HEIC": public.heic, public.jpeg)`.
    private func label(_ index: Int) -> String {
        let provider = providers[index]
        let name = provider.suggestedName.map { "\($0.debugDescription): " } ?? ""
        return "attachment \(index) (\(name)\(provider.registeredTypeIdentifiers.joined(separator: ", ")))"
    }

    private func index(of provider: NSItemProvider) -> Int? {
        providers.firstIndex { $0 === provider }
    }

    private var acceptedList: String { accepting.map(\.identifier).joined(separator: ", ") }

    private func isAccepted(_ type: String) -> Bool {
        accepting.contains { TypeRegistry.standard.conforms(type, to: $0.identifier) }
    }

    /// The outcomes reported for attachment `index`.
    private func answers(of index: Int) -> [ExtensionOutcome] {
        (outcomes ?? []).filter { $0.attachment === providers[index] }
    }

    /// Accepted outcomes with the attachment's index.
    private var accepted: [(index: Int, file: URL)] {
        (outcomes ?? []).compactMap { outcome in
            guard case .accepted(let file) = outcome.result, let index = index(of: outcome.attachment) else {
                return nil
            }
            return (index, file)
        }
    }

    // MARK: Checks

    private func finished() -> [Failure] {
        guard outcomes == nil else { return [] }
        let silent = providers.indices.flatMap { index in
            providers[index].loadRecords.filter { $0.result == nil }.map { record in
                "\(label(index)): load of \(record.registeredType ?? record.requestedType) never called back"
            }
        }
        let hint = silent.isEmpty
            ? "" : "; " + silent.joined(separator: "; ") + " — a provider may stay silent: every load needs a timeout"
        return [Failure(
            check: .finished,
            message: "expected the extension's code to return within \(deadline); found it still running\(hint)")]
    }

    private func completeRequestOnce() -> [Failure] {
        guard endings.count != 1 else { return [] }
        let calls = endings.map { ending -> String in
            switch ending {
            case .completed: "completeRequest(returningItems:)"
            case .cancelled: "cancelRequest(withError:)"
            }
        }
        let found = endings.isEmpty ? "found no call" : "found \(endings.count): \(calls.joined(separator: ", "))"
        return [Failure(
            check: .completeRequestOnce,
            message: "expected completeRequest(returningItems:) or cancelRequest(withError:) exactly once; \(found)")]
    }

    private func everyAttachmentAnswered() -> [Failure] {
        guard let outcomes else { return [] }
        var failures: [Failure] = []
        for index in providers.indices {
            let answers = answers(of: index)
            if answers.isEmpty {
                failures.append(Failure(
                    check: .everyAttachmentAnswered,
                    message: "\(label(index)): expected accepted, refused with a reason, or failed; found no outcome "
                        + "— the attachment was silently dropped"))
            } else if answers.count > 1 {
                failures.append(Failure(
                    check: .everyAttachmentAnswered,
                    message: "\(label(index)): expected one outcome; found \(answers.count)"))
            }
            for answer in answers {
                if case .refused(let reason) = answer.result, reason.trimmingCharacters(in: .whitespaces).isEmpty {
                    failures.append(Failure(
                        check: .everyAttachmentAnswered,
                        message: "\(label(index)): expected a refusal to give a reason; found an empty one"))
                }
            }
        }
        let strangers = outcomes.filter { index(of: $0.attachment) == nil }.count
        if strangers > 0 {
            failures.append(Failure(
                check: .everyAttachmentAnswered,
                message: "expected outcomes for the input items' attachments only; found \(strangers) for other "
                    + "providers"))
        }
        return failures
    }

    private func firstConformingType() -> [Failure] {
        guard outcomes != nil else { return [] }
        var failures: [Failure] = []
        for index in providers.indices {
            let provider = providers[index]
            let types = provider.registeredTypeIdentifiers
            let conforming = types.filter(isAccepted)
            let loaded = provider.loadRecords.compactMap(\.registeredType)
            let delivered = provider.loadRecords.filter { $0.result == .delivered }.compactMap(\.registeredType)
            for answer in answers(of: index) {
                switch answer.result {
                case .refused(let reason):
                    guard let first = conforming.first, !loaded.contains(where: isAccepted) else { continue }
                    failures.append(Failure(
                        check: .firstConformingType,
                        message: "\(label(index)): refused (\(reason)) without loading \(first), which conforms to "
                            + "\(acceptedList) — first type only: look for the first registered type that conforms, "
                            + "not at registeredTypeIdentifiers.first (\(types.first ?? "none"))"))
                case .accepted:
                    guard let wrong = delivered.first(where: { !isAccepted($0) }),
                        !delivered.contains(where: isAccepted)
                    else { continue }
                    let hint = conforming.first.map { "; \($0) does" } ?? "; none of its types does"
                    failures.append(Failure(
                        check: .firstConformingType,
                        message: "\(label(index)): accepted a \(wrong) representation, which does not conform to "
                            + "\(acceptedList)\(hint) — first type only: load the first type that conforms"))
                case .failed:
                    continue
                }
            }
        }
        return failures
    }

    private func copiedInsideHandler() -> [Failure] {
        guard let outcomes else { return [] }
        var failures: [Failure] = []
        for outcome in outcomes {
            guard let index = index(of: outcome.attachment) else { continue }
            switch outcome.result {
            case .failed(let error):
                guard let path = mentionedPaths(error).first(where: isTemporary) else { continue }
                failures.append(Failure(
                    check: .copiedInsideHandler,
                    message: "\(label(index)): expected the copy to be made inside loadFileRepresentation's "
                        + "completion handler; found it failed on the temporary file \(path), deleted when the handler "
                        + "returned — URL kept past the handler (\((error as NSError).localizedDescription))"))
            case .accepted(let file):
                guard isTemporary(file.path) else { continue }
                failures.append(Failure(
                    check: .copiedInsideHandler,
                    message: "\(label(index)): expected a copy in the app group's container; found the temporary "
                        + "file \(file.path) reported as the copy — URL kept past the handler"))
            case .refused:
                continue
            }
        }
        return failures
    }

    private func copiesReadable() -> [Failure] {
        var failures: [Failure] = []
        for (index, file) in accepted where !isTemporary(file.path) {
            let attributes = try? FileManager.default.attributesOfItem(atPath: file.path)
            guard let attributes, attributes[.type] as? FileAttributeType == .typeRegular else {
                let found = attributes == nil ? "no file there" : "not a regular file"
                failures.append(Failure(
                    check: .copiesReadable,
                    message: "\(label(index)): expected a readable copy at \(file.path) after the callbacks returned; "
                        + "found \(found)"))
                continue
            }
            guard let bytes = FileManager.default.contents(atPath: file.path) else {
                failures.append(Failure(
                    check: .copiesReadable,
                    message: "\(label(index)): expected a readable copy at \(file.path); found it unreadable"))
                continue
            }
            let sources = scenario.attachments[index].representations.compactMap(Self.bytes)
            guard !sources.isEmpty, !sources.contains(bytes) else { continue }
            failures.append(Failure(
                check: .copiesReadable,
                message: "\(label(index)): expected \(file.lastPathComponent) to hold the bytes of one of its "
                    + "representations; found \(bytes.count) bytes that match none (overwritten by another "
                    + "attachment, or a partial copy)"))
        }
        return failures
    }

    private func distinctNames() -> [Failure] {
        let byPath = Dictionary(grouping: accepted, by: { $0.file.standardizedFileURL.resolvingSymlinksInPath().path })
        return byPath.keys.sorted().compactMap { path in
            let sharing = byPath[path]!.map(\.index)
            guard sharing.count > 1 else { return nil }
            let names = sharing.map { "attachment \($0)" }.joined(separator: ", ")
            return Failure(
                check: .distinctNames,
                message: "expected a distinct file per attachment; found \(names) all stored as \(path), each copy "
                    + "overwriting the one before — fixed file name: name each copy uniquely, such as with a UUID")
        }
    }

    private func insideContainer() -> [Failure] {
        var failures: [Failure] = []
        let root = Self.canonical(container)
        for (index, file) in accepted where !isTemporary(file.path) {
            let path = Self.canonical(file)
            guard !path.hasPrefix(root + "/") else { continue }
            failures.append(Failure(
                check: .insideContainer,
                message: "\(label(index)): expected the copy inside the app group's container \(container.path); "
                    + "found it at \(file.path)"))
        }
        // Without outcomes (the code never returned) no file can be told stray from accepted.
        guard outcomes != nil else { return failures }
        let claimed = Set(accepted.map { Self.canonical($0.file) })
        let stray = Self.files(under: container).filter { !claimed.contains(Self.canonical($0)) }
        if !stray.isEmpty {
            failures.append(Failure(
                check: .insideContainer,
                message: "expected only accepted copies in the container; found \(stray.count) file(s) no outcome "
                    + "accepted: \(stray.map(\.lastPathComponent).sorted().joined(separator: ", ")) (a partial copy "
                    + "left by a refused or failed attachment?)"))
        }
        return failures
    }

    private func temporaryFilesGone() -> [Failure] {
        var failures: [Failure] = []
        for index in providers.indices {
            for record in providers[index].loadRecords where record.result != nil && !record.handlerReturned {
                failures.append(Failure(
                    check: .temporaryFilesGone,
                    message: "\(label(index)): expected the completion handler of the \(record.method.rawValue) "
                        + "load of \(record.registeredType ?? record.requestedType) to return within \(deadline); "
                        + "found it still running"))
            }
        }
        // loadItem's files stay, as on iOS, as long as their provider: they are not left behind.
        let kept = Set(providers.flatMap(\.loadRecords).filter(\.keepsFile).compactMap(\.temporaryURL)
            .map(Self.canonical))
        let left = Self.files(under: temporary).filter { !kept.contains(Self.canonical($0)) }
        if !left.isEmpty {
            failures.append(Failure(
                check: .temporaryFilesGone,
                message: "expected every temporary file gone once its handler returned; found \(left.count) left: "
                    + left.map(\.lastPathComponent).sorted().joined(separator: ", ")))
        }
        return failures
    }

    // MARK: Helpers

    private func isTemporary(_ path: String) -> Bool {
        let root = Self.canonical(temporary)
        let canonical = Self.canonical(URL(fileURLWithPath: path))
        return canonical == root || canonical.hasPrefix(root + "/") || path.hasPrefix(temporary.path + "/")
    }

    /// Paths an error names: `NSFilePathErrorKey`, `NSURLErrorKey`, those of underlying errors, and absolute paths in
    /// its description.
    private func mentionedPaths(_ error: any Error) -> [String] {
        var paths: [String] = []
        var next: NSError? = error as NSError
        while let current = next {
            if let path = current.userInfo[NSFilePathErrorKey] as? String { paths.append(path) }
            if let url = current.userInfo[NSURLErrorKey] as? URL, url.isFileURL { paths.append(url.path) }
            next = current.userInfo[NSUnderlyingErrorKey] as? NSError
        }
        let description = "\(error)"
        if let range = description.range(of: temporary.path) {
            let tail = description[range.lowerBound...].prefix { !$0.isWhitespace && $0 != "\"" && $0 != "," }
            paths.append(String(tail))
        }
        return paths
    }

    private static func bytes(_ representation: ScriptedItemProvider.Representation) -> Data? {
        guard representation.error == nil, !representation.noFile, !representation.neverCalls else { return nil }
        switch representation.source {
        case .file(let path): return FileManager.default.contents(atPath: path)
        case .bytes(let data): return data
        case .none: return nil
        }
    }

    private static func canonical(_ url: URL) -> String {
        url.standardizedFileURL.resolvingSymlinksInPath().path
    }

    /// Every regular file (or other non-directory) below `directory`, recursively.
    private static func files(under directory: URL) -> [URL] {
        guard let walker = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: [.isDirectoryKey])
        else { return [] }
        var found: [URL] = []
        while let url = walker.nextObject() as? URL {
            let isDirectory = (try? url.resourceValues(forKeys: [.isDirectoryKey]).isDirectory) ?? false
            if isDirectory != true { found.append(url) }
        }
        return found
    }
}
