#if os(Linux)
import Dispatch
import Foundation
import SharepipeCore
import Synchronization

/// The error domain of the errors an item provider reports itself (as opposed to those of the source app).
public let NSItemProviderErrorDomain = "NSItemProviderErrorDomain"

/// Options for file representations.
public struct NSItemProviderFileOptions: OptionSet, Sendable, Hashable {
    public let rawValue: Int

    public init(rawValue: Int) {
        self.rawValue = rawValue
    }

    /// The file may be opened in place (sharepipe always hands out a copy).
    public static let openInPlace = NSItemProviderFileOptions(rawValue: 1)
}

/// Who may see a representation; on Linux every representation is visible to the one process there is.
public enum NSItemProviderRepresentationVisibility: Int, Sendable, Hashable {
    case all = 0
    case team = 1
    case group = 2
    case ownProcess = 3
}

/// An item a source app shares, under Apple's name and with Apple's documented behaviour, over sharepipe's types.
///
/// Representations are kept in registration order, which is fidelity order. A load picks the first registered
/// representation whose type conforms to the requested one, converts between file and data as needed, and calls
/// the completion handler exactly once, on a background queue — with a result, the source's error, or a
/// cancellation error when the returned `Progress` is cancelled first. A file is handed out as a temporary copy in a
/// directory of its own: `loadFileRepresentation` deletes it as soon as its completion handler returns, `loadItem`
/// keeps it until the provider is released. docs/extension-kit.md lists every decision Apple's documentation leaves
/// open.
open class NSItemProvider: NSObject, @unchecked Sendable {
    /// Receives the item `loadItem(forTypeIdentifier:options:completionHandler:)` coerced.
    public typealias CompletionHandler = @Sendable ((any NSSecureCoding)?, (any Error)?) -> Void

    /// Produces an item registered with `registerItem(forTypeIdentifier:loadHandler:)`: it calls the completion
    /// handler with the item or an error; the class and options the loader asked with are always nil on Linux.
    public typealias LoadHandler = @Sendable (NSItemProvider.CompletionHandler?, AnyClass?, [AnyHashable: Any]?) -> Void

    /// The codes of `NSItemProviderErrorDomain`.
    public enum ErrorCode: Int, Sendable {
        case unknownError = -1
        case itemUnavailableError = -1000
        case unexpectedValueClassError = -1100
        case unavailableCoercionError = -1200
    }

    /// The domain of the errors an item provider reports itself.
    public static let errorDomain = NSItemProviderErrorDomain

    typealias FileLoadHandler = @Sendable (@escaping @Sendable (URL?, Bool, (any Error)?) -> Void) -> Progress?
    typealias DataLoadHandler = @Sendable (@escaping @Sendable (Data?, (any Error)?) -> Void) -> Progress?
    typealias ItemLoadHandler = @Sendable (@escaping NSItemProvider.CompletionHandler) -> Void

    /// One registered representation.
    struct Registration: Sendable {
        enum Loader: Sendable {
            case file(NSItemProviderFileOptions, FileLoadHandler)
            case data(DataLoadHandler)
            case item(ItemLoadHandler)
        }

        var typeIdentifier: String
        var visibility: NSItemProviderRepresentationVisibility
        var loader: Loader
    }

    private struct State {
        var registrations: [Registration] = []
        var suggestedName: String?
        var loads: [LoadRecord] = []
        /// The per-load directories of files handed out to be kept until the provider is released.
        var kept: [URL] = []
        var temporaryDirectory = FileManager.default.temporaryDirectory
            .appendingPathComponent("com.sharepipe.NSItemProvider", isDirectory: true)
    }

    private let state = Mutex(State())

    /// An item provider without representations.
    public override init() {
        super.init()
    }

    /// An item provider holding `item` (an `NSString`, `NSURL`, `NSData`, `NSDictionary`, …) under `typeIdentifier`,
    /// as a source app or a test makes one; no registration when either is nil.
    public convenience init(item: (any NSSecureCoding)?, typeIdentifier: String?) {
        self.init()
        guard let item, let typeIdentifier else { return }
        let held = HeldItem(item)
        registerItem(forTypeIdentifier: typeIdentifier) { completion, _, _ in completion?(held.value, nil) }
    }

    deinit {
        // The files loadItem handed out live as long as the provider (on iOS, as long as the extension's process).
        for directory in state.withLock({ $0.kept }) {
            try? FileManager.default.removeItem(at: directory)
        }
    }

    /// An item provider for a file: one file representation, its type found from the filename extension (a dynamic
    /// type for an unknown one), and the file's name as the suggested name. `nil` unless `fileURL` is a file URL
    /// naming an existing regular file.
    public convenience init?(contentsOf fileURL: URL) {
        guard fileURL.isFileURL else { return nil }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: fileURL.path, isDirectory: &isDirectory), !isDirectory.boolValue
        else { return nil }
        let type = UTType(filenameExtension: fileURL.pathExtension) ?? .data
        self.init()
        suggestedName = fileURL.lastPathComponent
        registerFileRepresentation(forTypeIdentifier: type.identifier, visibility: .all) { completion in
            completion(fileURL, false, nil)
            return nil
        }
    }

    /// The name the source suggests for the item, such as `IMG_0001.HEIC`.
    open var suggestedName: String? {
        get { state.withLock { $0.suggestedName } }
        set { state.withLock { $0.suggestedName = newValue } }
    }

    /// The registered type identifiers, in registration (fidelity) order.
    open var registeredTypeIdentifiers: [String] {
        state.withLock { $0.registrations.map(\.typeIdentifier) }
    }

    /// The registered type identifiers whose representations satisfy `fileOptions`, in registration order.
    open func registeredTypeIdentifiers(fileOptions: NSItemProviderFileOptions) -> [String] {
        state.withLock { state in
            state.registrations.filter { Self.satisfies($0, fileOptions) }.map(\.typeIdentifier)
        }
    }

    /// Whether a registered type conforms to `typeIdentifier` (`public.jpeg` answers for `public.image`).
    open func hasItemConformingToTypeIdentifier(_ typeIdentifier: String) -> Bool {
        hasRepresentationConforming(toTypeIdentifier: typeIdentifier)
    }

    /// Whether a registered type that satisfies `fileOptions` conforms to `typeIdentifier`.
    open func hasRepresentationConforming(
        toTypeIdentifier typeIdentifier: String, fileOptions: NSItemProviderFileOptions = []
    ) -> Bool {
        registration(conformingTo: typeIdentifier, fileOptions: fileOptions) != nil
    }

    /// Registers a representation the source hands over as a file. The load handler calls its completion with the
    /// file's URL (valid until that completion returns), whether it must be read through a file coordinator, or an
    /// error. A type already registered keeps its first registration.
    open func registerFileRepresentation(
        forTypeIdentifier typeIdentifier: String, fileOptions: NSItemProviderFileOptions = [],
        visibility: NSItemProviderRepresentationVisibility,
        loadHandler: @escaping @Sendable (@escaping @Sendable (URL?, Bool, (any Error)?) -> Void) -> Progress?
    ) {
        register(Registration(
            typeIdentifier: typeIdentifier, visibility: visibility, loader: .file(fileOptions, loadHandler)))
    }

    /// Registers a representation the source hands over as bytes. A type already registered keeps its first
    /// registration.
    open func registerDataRepresentation(
        forTypeIdentifier typeIdentifier: String, visibility: NSItemProviderRepresentationVisibility,
        loadHandler: @escaping @Sendable (@escaping @Sendable (Data?, (any Error)?) -> Void) -> Progress?
    ) {
        register(Registration(typeIdentifier: typeIdentifier, visibility: visibility, loader: .data(loadHandler)))
    }

    /// Registers an item the source produces on demand: `loadHandler` gets a completion handler to call with the
    /// item (an `NSString`, `NSURL`, `NSData`, property list, …) or an error. A type already registered keeps its
    /// first registration.
    open func registerItem(
        forTypeIdentifier typeIdentifier: String, loadHandler: @escaping NSItemProvider.LoadHandler
    ) {
        register(Registration(typeIdentifier: typeIdentifier, visibility: .all, loader: .item { completion in
            loadHandler(completion, nil, nil)
        }))
    }

    private func register(_ registration: Registration) {
        state.withLock { state in
            guard !state.registrations.contains(where: {
                $0.typeIdentifier.lowercased() == registration.typeIdentifier.lowercased()
            }) else { return }
            state.registrations.append(registration)
        }
    }

    /// Writes a copy of the first representation conforming to `typeIdentifier` to a temporary file and hands its
    /// URL to `completionHandler`, exactly once, on a background queue; the file is deleted when the handler
    /// returns, so copy or move it inside the handler.
    @discardableResult
    open func loadFileRepresentation(
        forTypeIdentifier typeIdentifier: String, completionHandler: @escaping @Sendable (URL?, (any Error)?) -> Void
    ) -> Progress {
        load(typeIdentifier, method: .file) { payload, _, error in
            switch payload {
            case .file(let url)?: completionHandler(url, nil)
            case .data?, .item?, nil: completionHandler(nil, error ?? Self.error(.unknownError, typeIdentifier))
            }
        }
    }

    /// Loads the bytes of the first representation conforming to `typeIdentifier` (a file representation is read
    /// whole) and hands them to `completionHandler`, exactly once, on a background queue.
    @discardableResult
    open func loadDataRepresentation(
        forTypeIdentifier typeIdentifier: String, completionHandler: @escaping @Sendable (Data?, (any Error)?) -> Void
    ) -> Progress {
        load(typeIdentifier, method: .data) { payload, _, error in
            switch payload {
            case .data(let data)?: completionHandler(data, nil)
            case .file?, .item?, nil: completionHandler(nil, error ?? Self.error(.unknownError, typeIdentifier))
            }
        }
    }

    /// Loads the first representation conforming to `typeIdentifier` and coerces it by what was registered: a file
    /// becomes the `NSURL` of a temporary copy that stays readable until the provider is released; bytes of a type
    /// conforming to `public.url` an `NSURL`, to `public.text` an `NSString`, to `com.apple.property-list` the property
    /// list (`NSDictionary`, `NSArray`, …), any other bytes `NSData`; a registered item is handed out as it is
    /// (`NSData` of such a type coerced as bytes are). `options` are accepted and ignored. The handler runs exactly
    /// once, on a background queue.
    open func loadItem(
        forTypeIdentifier typeIdentifier: String, options: [AnyHashable: Any]? = nil,
        completionHandler: NSItemProvider.CompletionHandler? = nil
    ) {
        loadCoercedItem(typeIdentifier) { item, error in completionHandler?(item?.value, error) }
    }

    /// `loadItem`'s load; returns the load's progress (which `loadItem` itself does not hand out, as on iOS).
    @discardableResult
    func loadCoercedItem(
        _ typeIdentifier: String, handler: @escaping @Sendable (HeldItem?, (any Error)?) -> Void
    ) -> Progress {
        load(typeIdentifier, method: .item) { payload, registeredType, error in
            guard let payload else {
                handler(nil, error ?? Self.error(.unknownError, typeIdentifier))
                return
            }
            do {
                handler(HeldItem(try Self.coerce(payload, registeredAs: registeredType)), nil)
            } catch {
                handler(nil, error)
            }
        }
    }

    // MARK: Loading

    /// What a load hands its handler: a temporary file the kit owns, bytes, or an item as the source registered it.
    enum Payload: Sendable {
        case file(URL)
        case data(Data)
        case item(HeldItem)
    }

    /// How the caller asked for the representation.
    package enum LoadMethod: String, Sendable {
        case file, data, item, object
    }

    /// Loads the first representation conforming to `requested` as `method` wants it. A temporary file is deleted
    /// when the handler returns, or kept until the provider is released when `keepsFile` (loadItem and the async
    /// file loads, whose callers read the file later). The handler also gets the registered type that answered.
    @discardableResult
    func load(
        _ requested: String, method: LoadMethod, keepsFile: Bool? = nil,
        handler: @escaping @Sendable (Payload?, String, (any Error)?) -> Void
    ) -> Progress {
        let progress = Progress(totalUnitCount: 1)
        let chosen = registration(conformingTo: requested, fileOptions: [])
        let (index, directory, suggested) = state.withLock { state in
            state.loads.append(LoadRecord(
                requestedType: requested, registeredType: chosen?.typeIdentifier, method: method))
            return (state.loads.count - 1, state.temporaryDirectory, state.suggestedName)
        }
        let answering = chosen?.typeIdentifier ?? requested
        let once = LoadCompletion(
            provider: self, record: index, progress: progress, keepsFile: keepsFile ?? (method == .item)
        ) { payload, error in
            handler(payload, answering, error)
        }
        guard let chosen else {
            once.finish(nil, Self.error(.itemUnavailableError, requested))
            return progress
        }
        let name = Self.temporaryName(suggested: suggested, type: chosen.typeIdentifier)
        let wantsFile = method == .file || (method == .item && chosen.isFile)
        let sourceProgress = Mutex<Progress?>(nil)
        progress.cancellationHandler = {
            sourceProgress.withLock { $0 }?.cancel()
            once.finish(nil, CocoaError(.userCancelled))
        }
        let returned: Progress?
        switch chosen.loader {
        case .file(_, let loadHandler):
            returned = loadHandler { url, _, error in
                guard !once.isFinished else { return }
                guard let url else {
                    once.finish(nil, error ?? Self.error(.itemUnavailableError, requested))
                    return
                }
                // The source's URL is only valid until this callback returns: copy or read it now.
                do {
                    if wantsFile {
                        once.finish(.file(try Self.temporaryCopy(of: url, named: name, in: directory)), nil)
                    } else {
                        once.finish(.data(try Data(contentsOf: url)), nil)
                    }
                } catch {
                    once.finish(nil, error)
                }
            }
        case .data(let loadHandler):
            returned = loadHandler { data, error in
                guard !once.isFinished else { return }
                guard let data else {
                    once.finish(nil, error ?? Self.error(.itemUnavailableError, requested))
                    return
                }
                do {
                    let payload = wantsFile ? Payload.file(try Self.temporaryFile(data, named: name, in: directory))
                        : .data(data)
                    once.finish(payload, nil)
                } catch {
                    once.finish(nil, error)
                }
            }
        case .item(let loadHandler):
            returned = nil
            let type = chosen.typeIdentifier
            loadHandler { item, error in
                guard !once.isFinished else { return }
                guard let item else {
                    once.finish(nil, error ?? Self.error(.itemUnavailableError, requested))
                    return
                }
                do {
                    switch method {
                    case .item, .object:
                        once.finish(.item(HeldItem(item)), nil)
                    case .data:
                        once.finish(.data(try Self.bytes(of: item, registeredAs: type)), nil)
                    case .file:
                        if let file = Self.file(of: item, registeredAs: type) {
                            once.finish(.file(try Self.temporaryCopy(of: file, named: name, in: directory)), nil)
                        } else {
                            let bytes = try Self.bytes(of: item, registeredAs: type)
                            once.finish(.file(try Self.temporaryFile(bytes, named: name, in: directory)), nil)
                        }
                    }
                } catch {
                    once.finish(nil, error)
                }
            }
        }
        sourceProgress.withLock { $0 = returned }
        return progress
    }

    /// The first registration, in fidelity order, whose type conforms to `typeIdentifier` and satisfies the options.
    private func registration(
        conformingTo typeIdentifier: String, fileOptions: NSItemProviderFileOptions
    ) -> Registration? {
        state.withLock { state in
            state.registrations.first {
                Self.satisfies($0, fileOptions) && UTType.registry.conforms($0.typeIdentifier, to: typeIdentifier)
            }
        }
    }

    private static func satisfies(_ registration: Registration, _ fileOptions: NSItemProviderFileOptions) -> Bool {
        guard !fileOptions.isEmpty else { return true }
        guard case .file(let options, _) = registration.loader else { return false }
        return options.isSuperset(of: fileOptions)
    }

    /// An error of `NSItemProviderErrorDomain` naming the type asked for.
    static func error(_ code: ErrorCode, _ typeIdentifier: String) -> NSError {
        let reason = switch code {
        case .itemUnavailableError: "no representation conforming to \(typeIdentifier) could be loaded"
        case .unexpectedValueClassError: "the item for \(typeIdentifier) is not of the expected class"
        case .unavailableCoercionError: "the item cannot be coerced to \(typeIdentifier)"
        case .unknownError: "loading \(typeIdentifier) failed"
        }
        return NSError(domain: NSItemProviderErrorDomain, code: code.rawValue, userInfo: [
            NSLocalizedDescriptionKey: "Cannot load representation of type \(typeIdentifier)",
            NSLocalizedFailureReasonErrorKey: reason,
        ])
    }

    /// `loadItem`'s coercion of what the registration under `typeIdentifier` delivered: a file is its URL, bytes are
    /// coerced by the registered type, and a registered item is handed out as it is (bytes coerced as above).
    static func coerce(_ payload: Payload, registeredAs typeIdentifier: String) throws -> any NSSecureCoding {
        switch payload {
        case .file(let url):
            return url as NSURL
        case .data(let data):
            return try coerce(data, registeredAs: typeIdentifier)
        case .item(let held):
            guard let data = held.value as? NSData else { return held.value }
            return try coerce(data as Data, registeredAs: typeIdentifier)
        }
    }

    /// `loadItem`'s coercion of bytes registered under `typeIdentifier`.
    private static func coerce(_ data: Data, registeredAs typeIdentifier: String) throws -> any NSSecureCoding {
        if UTType.registry.conforms(typeIdentifier, to: UTType.url.identifier) {
            guard let url = Self.url(from: data) else { throw Self.error(.unavailableCoercionError, typeIdentifier) }
            return url as NSURL
        }
        if UTType.registry.conforms(typeIdentifier, to: UTType.text.identifier) {
            guard let text = Self.text(from: data, registeredAs: typeIdentifier) else {
                throw Self.error(.unavailableCoercionError, typeIdentifier)
            }
            return text as NSString
        }
        if UTType.registry.conforms(typeIdentifier, to: UTType.propertyList.identifier) {
            let list = try? PropertyListSerialization.propertyList(from: data, options: [], format: nil)
            if let dictionary = list as? [String: Any] { return dictionary as NSDictionary }
            if let array = list as? [Any] { return array as NSArray }
            if let text = list as? String { return text as NSString }
        }
        return data as NSData
    }

    /// Text from bytes registered under a text type: UTF-16 for the UTF-16 types (by the byte-order mark; without
    /// one, native little-endian order for `public.utf16-plain-text` and big-endian for the external type), UTF-8 for
    /// every other one.
    static func text(from data: Data, registeredAs typeIdentifier: String) -> String? {
        let conforms = { (type: UTType) in UTType.registry.conforms(typeIdentifier, to: type.identifier) }
        guard conforms(.utf16PlainText) || conforms(.utf16ExternalPlainText) else {
            return String(data: data, encoding: .utf8)
        }
        let marked = data.starts(with: [0xFF, 0xFE]) || data.starts(with: [0xFE, 0xFF])
        let encoding: String.Encoding = marked ? .utf16
            : conforms(.utf16PlainText) ? .utf16LittleEndian : .utf16BigEndian
        return String(data: data, encoding: encoding)
    }

    /// The bytes a registered item gives when loaded as data: an `NSData`'s own, an `NSString`'s UTF-8, the contents
    /// of a file `NSURL` registered as a file's type, the UTF-8 of any other `NSURL`, a binary property list of an
    /// `NSDictionary` or `NSArray`; `unavailableCoercionError` for anything else.
    static func bytes(of item: any NSSecureCoding, registeredAs typeIdentifier: String) throws -> Data {
        if let data = item as? NSData { return data as Data }
        if let text = item as? NSString { return Data((text as String).utf8) }
        if let file = file(of: item, registeredAs: typeIdentifier) { return try Data(contentsOf: file) }
        if let url = item as? NSURL { return Data(url.absoluteString.utf8) }
        if item is NSDictionary || item is NSArray {
            return try PropertyListSerialization.data(fromPropertyList: item, format: .binary, options: 0)
        }
        throw Self.error(.unavailableCoercionError, typeIdentifier)
    }

    /// The file a registered item stands for: a file `NSURL` registered under a type that is not a URL type (an
    /// image's file, say; a `public.file-url` item is the URL itself).
    private static func file(of item: any NSSecureCoding, registeredAs typeIdentifier: String) -> URL? {
        guard let url = (item as? NSURL).map({ $0 as URL }), url.isFileURL,
              !UTType.registry.conforms(typeIdentifier, to: UTType.url.identifier)
        else { return nil }
        return url
    }

    /// A URL from the bytes of a URL representation: a property list as `NSURL` writes itself (an array whose first
    /// element is the URL string), a property-list string, or the UTF-8 text of the URL.
    static func url(from data: Data) -> URL? {
        if let list = try? PropertyListSerialization.propertyList(from: data, options: [], format: nil) {
            if let array = list as? [Any], let text = array.first as? String { return URL(string: text) }
            if let text = list as? String { return URL(string: text) }
        }
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty ? nil : URL(string: text)
    }

    /// The temporary file's name: the suggested name's stem (or `item`) and the delivered type's preferred extension.
    static func temporaryName(suggested: String?, type: String) -> String {
        var stem = (suggested.map { ($0 as NSString).deletingPathExtension } ?? "")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "\0", with: "_")
        if stem.isEmpty || stem == "." || stem == ".." { stem = "item" }
        if stem.utf8.count > 200 { stem = String(decoding: stem.utf8.prefix(200), as: UTF8.self) }
        guard let pathExtension = UTType.registry.preferredFilenameExtension(for: type), !pathExtension.isEmpty else {
            return stem
        }
        return stem + "." + pathExtension
    }

    private static func temporaryCopy(of source: URL, named name: String, in directory: URL) throws -> URL {
        let destination = try makeLoadDirectory(in: directory).appendingPathComponent(name)
        do {
            try FileManager.default.copyItem(at: source, to: destination)
        } catch {
            try? FileManager.default.removeItem(at: destination.deletingLastPathComponent())
            throw error
        }
        return destination
    }

    private static func temporaryFile(_ data: Data, named name: String, in directory: URL) throws -> URL {
        let destination = try makeLoadDirectory(in: directory).appendingPathComponent(name)
        do {
            try data.write(to: destination)
        } catch {
            try? FileManager.default.removeItem(at: destination.deletingLastPathComponent())
            throw error
        }
        return destination
    }

    /// A fresh directory for one load, so that two loads of same-named items never share a path.
    private static func makeLoadDirectory(in directory: URL) throws -> URL {
        let loadDirectory = directory.appendingPathComponent(UUID().uuidString, isDirectory: true)
        try FileManager.default.createDirectory(at: loadDirectory, withIntermediateDirectories: true)
        return loadDirectory
    }

    // MARK: What the harness observes

    /// One load asked of this provider, as the extension harness sees it.
    package struct LoadRecord: Sendable {
        /// What the load ended with.
        package enum Result: Sendable, Equatable {
            case delivered
            case failed(String)
            case cancelled
        }

        /// The type identifier the caller asked for.
        package var requestedType: String
        /// The registered type that answered, or nil when none conforms.
        package var registeredType: String?
        /// The method called.
        package var method: LoadMethod
        /// The temporary file handed out, if any.
        package var temporaryURL: URL?
        /// How it ended, nil while it has not.
        package var result: Result?
        /// Whether the completion handler has returned.
        package var handlerReturned = false
        /// Whether the temporary file stays until the provider is released (loadItem's), rather than going when the
        /// handler returns.
        package var keepsFile = false
        /// The error handed to the completion handler, if any.
        package var errorDescription: String?
    }

    /// Every load asked of this provider so far, in call order.
    package var loadRecords: [LoadRecord] { state.withLock { $0.loads } }

    /// The directory temporary files of loads go to (one fresh subdirectory per load).
    package var temporaryDirectory: URL {
        get { state.withLock { $0.temporaryDirectory } }
        set { state.withLock { $0.temporaryDirectory = newValue } }
    }

    fileprivate func update(record index: Int, _ change: (inout LoadRecord) -> Void) {
        state.withLock { change(&$0.loads[index]) }
    }

    /// Keeps a load's directory until the provider is released.
    fileprivate func keep(_ directory: URL) {
        state.withLock { $0.kept.append(directory) }
    }
}

/// An item a source registered, handed between queues as Apple hands it (items are immutable value classes).
struct HeldItem: @unchecked Sendable {
    let value: any NSSecureCoding

    init(_ value: any NSSecureCoding) {
        self.value = value
    }
}

extension NSItemProvider.Registration {
    var isFile: Bool {
        if case .file = loader { return true }
        return false
    }
}

/// The one completion of one load: the first of result, source error and cancellation wins; the handler runs on a
/// background queue and a temporary file is deleted the moment it returns (or, when kept, when the provider goes).
private final class LoadCompletion: Sendable {
    private let finished = Mutex(false)
    private let provider: NSItemProvider
    private let record: Int
    private let progress: Progress
    private let keepsFile: Bool
    private let handler: @Sendable (NSItemProvider.Payload?, (any Error)?) -> Void

    init(
        provider: NSItemProvider, record: Int, progress: Progress, keepsFile: Bool,
        handler: @escaping @Sendable (NSItemProvider.Payload?, (any Error)?) -> Void
    ) {
        self.provider = provider
        self.record = record
        self.progress = progress
        self.keepsFile = keepsFile
        self.handler = handler
    }

    var isFinished: Bool { finished.withLock { $0 } }

    func finish(_ payload: NSItemProvider.Payload?, _ error: (any Error)?) {
        let first = finished.withLock { done in
            defer { done = true }
            return !done
        }
        guard first else {
            if case .file(let url)? = payload {
                try? FileManager.default.removeItem(at: url.deletingLastPathComponent())
            }
            return
        }
        let temporaryURL: URL?
        if case .file(let url)? = payload { temporaryURL = url } else { temporaryURL = nil }
        let keepsFile = self.keepsFile && temporaryURL != nil
        provider.update(record: record) { record in
            record.temporaryURL = temporaryURL
            record.keepsFile = keepsFile
            if payload != nil {
                record.result = .delivered
            } else if let error = error as? CocoaError, error.code == .userCancelled {
                record.result = .cancelled
            } else {
                record.result = .failed(error.map { "\($0)" } ?? "no item")
            }
            record.errorDescription = error.map { "\($0)" }
        }
        let (progress, handler, provider, record) = (self.progress, self.handler, self.provider, self.record)
        DispatchQueue.global(qos: .userInitiated).async {
            // The cancellation handler holds this completion; dropping it ends the cycle with the progress.
            progress.cancellationHandler = nil
            progress.completedUnitCount = progress.totalUnitCount
            handler(payload, error)
            if let temporaryURL {
                if keepsFile {
                    provider.keep(temporaryURL.deletingLastPathComponent())
                } else {
                    try? FileManager.default.removeItem(at: temporaryURL.deletingLastPathComponent())
                }
            }
            provider.update(record: record) { $0.handlerReturned = true }
        }
    }
}
#endif
