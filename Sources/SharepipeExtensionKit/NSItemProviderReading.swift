#if os(Linux)
import Foundation

/// A class whose instances an item provider can make from a representation, under Apple's name. The kit's
/// conformances: `NSString` (plain text), `NSURL` (URLs) and `NSData` (any bytes).
public protocol NSItemProviderReading: NSObjectProtocol, SendableMetatype {
    /// The types an instance can be made from, most preferred first.
    static var readableTypeIdentifiersForItemProvider: [String] { get }

    /// An instance made from the bytes of a representation of `typeIdentifier`.
    static func object(withItemProviderData data: Data, typeIdentifier: String) throws -> Self
}

extension NSString: NSItemProviderReading {
    /// Plain text of any encoding (UTF-16 for the UTF-16 types, UTF-8 otherwise).
    public static var readableTypeIdentifiersForItemProvider: [String] {
        [UTType.utf8PlainText.identifier, UTType.utf16ExternalPlainText.identifier, UTType.utf16PlainText.identifier,
         UTType.plainText.identifier]
    }

    /// The text of `data`; `unavailableCoercionError` when it does not decode.
    public static func object(withItemProviderData data: Data, typeIdentifier: String) throws -> Self {
        guard let text = NSItemProvider.text(from: data, registeredAs: typeIdentifier),
              let object = NSString(string: text) as? Self
        else { throw NSItemProvider.error(.unavailableCoercionError, typeIdentifier) }
        return object
    }
}

extension NSURL: NSItemProviderReading {
    /// URLs, file URLs included (a file's contents are not a URL: a JPEG-only provider cannot load one).
    public static var readableTypeIdentifiersForItemProvider: [String] {
        [UTType.url.identifier]
    }

    /// The URL in `data` (the property list `NSURL` writes, or its text); `unavailableCoercionError` when none.
    public static func object(withItemProviderData data: Data, typeIdentifier: String) throws -> Self {
        guard let url = NSItemProvider.url(from: data), let object = (url as NSURL) as? Self else {
            throw NSItemProvider.error(.unavailableCoercionError, typeIdentifier)
        }
        return object
    }
}

extension NSData: NSItemProviderReading {
    /// Any bytes.
    public static var readableTypeIdentifiersForItemProvider: [String] {
        [UTType.data.identifier]
    }

    /// `data` itself.
    public static func object(withItemProviderData data: Data, typeIdentifier: String) throws -> Self {
        guard let object = NSData(data: data) as? Self else {
            throw NSItemProvider.error(.unexpectedValueClassError, typeIdentifier)
        }
        return object
    }
}

extension NSItemProvider {
    /// Whether a registered representation conforms to a type `aClass` can read.
    public func canLoadObject(ofClass aClass: any NSItemProviderReading.Type) -> Bool {
        readableType(for: aClass) != nil
    }

    /// Whether `String`, `URL` or `Data` can be loaded: whether its class (`NSString`, `NSURL`, `NSData`) can be.
    public func canLoadObject<T: _ObjectiveCBridgeable>(ofClass: T.Type) -> Bool
    where T._ObjectiveCType: NSItemProviderReading {
        canLoadObject(ofClass: T._ObjectiveCType.self)
    }

    /// Makes an instance of `aClass` from the first registered representation, in fidelity order, whose type
    /// conforms to one `aClass` reads: an item registered as an instance of `aClass` is handed out as it is, any
    /// other representation is read as bytes. The handler runs exactly once, on a background queue;
    /// `itemUnavailableError` when no representation fits.
    @discardableResult
    public func loadObject(
        ofClass aClass: any NSItemProviderReading.Type,
        completionHandler: @escaping @Sendable ((any NSItemProviderReading)?, (any Error)?) -> Void
    ) -> Progress {
        let readable = aClass.readableTypeIdentifiersForItemProvider
        let requested = readableType(for: aClass) ?? readable.first ?? UTType.item.identifier
        return load(requested, method: .object) { payload, registeredType, error in
            do {
                switch payload {
                case .item(let held)?:
                    if let object = held.value as? NSObject, object.isKind(of: aClass),
                       let readable = object as? any NSItemProviderReading {
                        completionHandler(readable, nil)
                    } else {
                        let bytes = try Self.bytes(of: held.value, registeredAs: registeredType)
                        completionHandler(
                            try aClass.object(withItemProviderData: bytes, typeIdentifier: registeredType), nil)
                    }
                case .data(let data)?:
                    completionHandler(
                        try aClass.object(withItemProviderData: data, typeIdentifier: registeredType), nil)
                case .file?, nil:
                    completionHandler(nil, error ?? Self.error(.unknownError, requested))
                }
            } catch {
                completionHandler(nil, error)
            }
        }
    }

    /// Loads a `String`, `URL` or `Data` through its class (`NSString`, `NSURL`, `NSData`), as Swift's overlay on
    /// Apple's platforms does.
    @discardableResult
    public func loadObject<T: _ObjectiveCBridgeable & Sendable>(
        ofClass: T.Type, completionHandler: @escaping @Sendable (T?, (any Error)?) -> Void
    ) -> Progress where T._ObjectiveCType: NSItemProviderReading {
        loadObject(ofClass: T._ObjectiveCType.self) { object, error in
            guard let object = object as? T._ObjectiveCType else {
                completionHandler(nil, error ?? Self.error(.unexpectedValueClassError, "\(T.self)"))
                return
            }
            completionHandler(T._unconditionallyBridgeFromObjectiveC(object), nil)
        }
    }

    /// The registered type, in fidelity order, that conforms to a type `aClass` reads.
    private func readableType(for aClass: any NSItemProviderReading.Type) -> String? {
        let readable = aClass.readableTypeIdentifiersForItemProvider
        return registeredTypeIdentifiers.first { registered in
            readable.contains { UTType.registry.conforms(registered, to: $0) }
        }
    }
}
#endif
