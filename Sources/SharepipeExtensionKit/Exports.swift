// Apple's UniformTypeIdentifiers and MobileCoreServices re-export Foundation, so an extension's file that imports
// only one of them still sees `URL`, `Data` and `NSItemProvider`; the kit does the same.
@_exported import Foundation
