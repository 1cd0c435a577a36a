import Foundation
import SharepipeExtensionKit
import Synchronization

/// The package's root directory (the one holding Package.swift).
let packageRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// A file under `Fixtures/`.
func fixture(_ relative: String) -> URL {
    packageRoot.appendingPathComponent("Fixtures").appendingPathComponent(relative)
}

/// A fresh directory for one test, removed when the value is released.
final class TemporaryDirectory: Sendable {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("sharepipe-kit-test-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(at: url)
    }
}

/// A failure of the test support itself.
struct SupportError: Error, CustomStringConvertible {
    var description: String

    init(_ description: String) {
        self.description = description
    }
}

/// Waits until `condition` holds, polling every 2 ms; false when `timeout` passed first.
func eventually(within timeout: Duration = .seconds(60), _ condition: () -> Bool) async -> Bool {
    let limit = ContinuousClock.now + timeout
    while !condition() {
        guard ContinuousClock.now < limit else { return false }
        try? await Task.sleep(for: .milliseconds(2))
    }
    return true
}

/// A value set from a completion handler and read by the test.
final class Box<Value: Sendable>: Sendable {
    private let storage: Mutex<Value>

    init(_ value: Value) {
        storage = Mutex(value)
    }

    var value: Value { storage.withLock { $0 } }

    func update(_ change: (inout Value) -> Void) {
        storage.withLock { change(&$0) }
    }
}

/// Runs `start` and waits for the completion it hands out to be called, with a deadline.
func completion<Value: Sendable>(
    within timeout: Duration = .seconds(60), _ start: (@escaping @Sendable (Value) -> Void) -> Void
) async throws -> Value {
    let box = Box<Value?>(nil)
    start { value in box.update { $0 = value } }
    guard await eventually(within: timeout, { box.value != nil }), let value = box.value else {
        throw SupportError("the completion handler was not called within \(timeout)")
    }
    return value
}

/// A provider whose one file representation hands out `file` (the source app's own file).
func fileProvider(_ type: String, _ file: URL, suggestedName: String? = nil) -> NSItemProvider {
    let provider = NSItemProvider()
    provider.suggestedName = suggestedName
    provider.registerFileRepresentation(forTypeIdentifier: type, visibility: .all) { completion in
        completion(file, false, nil)
        return nil
    }
    return provider
}

/// A provider whose one data representation hands out `data`.
func dataProvider(_ type: String, _ data: Data, suggestedName: String? = nil) -> NSItemProvider {
    let provider = NSItemProvider()
    provider.suggestedName = suggestedName
    provider.registerDataRepresentation(forTypeIdentifier: type, visibility: .all) { completion in
        completion(data, nil)
        return nil
    }
    return provider
}
