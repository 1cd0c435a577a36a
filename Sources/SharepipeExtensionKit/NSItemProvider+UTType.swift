#if os(Linux)
import Foundation

extension NSItemProvider {
    /// The registered types, in registration (fidelity) order; identifiers no `UTType` has are left out.
    public var registeredContentTypes: [UTType] { registeredTypeIdentifiers.compactMap { UTType($0) } }

    /// The registered types that can be opened in place (none: sharepipe always hands out a copy).
    public var registeredContentTypesForOpenInPlace: [UTType] {
        registeredTypeIdentifiers(fileOptions: [.openInPlace]).compactMap { UTType($0) }
    }

    /// The registered types that conform to `contentType`, in registration order.
    public func registeredContentTypes(conformingTo contentType: UTType) -> [UTType] {
        registeredContentTypes.filter { $0.conforms(to: contentType) }
    }

    /// Registers a representation handed over as bytes; see
    /// `registerDataRepresentation(forTypeIdentifier:visibility:loadHandler:)`.
    public func registerDataRepresentation(
        for contentType: UTType, visibility: NSItemProviderRepresentationVisibility = .all,
        loadHandler: @escaping @Sendable (@escaping (Data?, (any Error)?) -> Void) -> Progress?
    ) {
        registerDataRepresentation(forTypeIdentifier: contentType.identifier, visibility: visibility) { completion in
            loadHandler(completion)
        }
    }

    /// Registers a representation handed over as a file; see
    /// `registerFileRepresentation(forTypeIdentifier:fileOptions:visibility:loadHandler:)`.
    public func registerFileRepresentation(
        for contentType: UTType, visibility: NSItemProviderRepresentationVisibility = .all, openInPlace: Bool = false,
        loadHandler: @escaping @Sendable (@escaping (URL?, Bool, (any Error)?) -> Void) -> Progress?
    ) {
        registerFileRepresentation(
            forTypeIdentifier: contentType.identifier, fileOptions: openInPlace ? [.openInPlace] : [],
            visibility: visibility
        ) { completion in
            loadHandler(completion)
        }
    }

    /// Loads the bytes of the first representation conforming to `contentType`; see
    /// `loadDataRepresentation(forTypeIdentifier:completionHandler:)`.
    @discardableResult
    public func loadDataRepresentation(
        for contentType: UTType, completionHandler: @escaping @Sendable (Data?, (any Error)?) -> Void
    ) -> Progress {
        loadDataRepresentation(forTypeIdentifier: contentType.identifier, completionHandler: completionHandler)
    }

    /// Loads a temporary copy of the first representation conforming to `contentType`, deleted when the handler
    /// returns; the handler's `Bool` (opened in place) is always false, since the file is always a copy.
    @discardableResult
    public func loadFileRepresentation(
        for contentType: UTType, openInPlace: Bool = false,
        completionHandler: @escaping @Sendable (URL?, Bool, (any Error)?) -> Void
    ) -> Progress {
        loadFileRepresentation(forTypeIdentifier: contentType.identifier) { url, error in
            completionHandler(url, false, error)
        }
    }
}
#endif
