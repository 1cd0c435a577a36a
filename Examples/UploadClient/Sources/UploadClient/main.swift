import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `UploadClient URL FILE [TYPE]`: uploads FILE to URL (`…/v1/shares`) with `uploadTask(with:fromFile:)`, as a
/// share extension hands a file to a background session, and prints the daemon's receipt. The bearer token, when
/// the daemon wants one, comes from `$SHAREPIPE_TOKEN`. Exit 0 on 201, 3 on another HTTP status, 1 when the
/// upload could not be made, 2 on a usage error.
let arguments = CommandLine.arguments.dropFirst()
guard (2...3).contains(arguments.count), let url = URL(string: arguments[arguments.startIndex]) else {
    FileHandle.standardError.write(Data("usage: UploadClient URL FILE [TYPE-ID]\n".utf8))
    exit(2)
}
let file = URL(fileURLWithPath: arguments[arguments.startIndex + 1])
var request = URLRequest(url: url)
request.httpMethod = "POST"
if arguments.count == 3 {
    request.setValue(arguments[arguments.startIndex + 2], forHTTPHeaderField: "Sharepipe-Type")
}
// RFC 6266: the UTF-8 name percent-encoded in filename*, so any name survives.
let encodedName = file.lastPathComponent.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "upload"
request.setValue("attachment; filename*=UTF-8''\(encodedName)", forHTTPHeaderField: "Content-Disposition")
if let token = ProcessInfo.processInfo.environment["SHAREPIPE_TOKEN"] {
    request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
}

/// What the upload task reported.
final class Outcome: @unchecked Sendable {
    var status = 0
    var body = Data()
    var failure: String?
}

let outcome = Outcome()
let finished = DispatchSemaphore(value: 0)
let task = URLSession.shared.uploadTask(with: request, fromFile: file) { data, response, error in
    if let error {
        outcome.failure = "\(error)"
    } else {
        outcome.status = (response as? HTTPURLResponse)?.statusCode ?? 0
        outcome.body = data ?? Data()
    }
    finished.signal()
}
task.resume()
finished.wait()

if let failure = outcome.failure {
    FileHandle.standardError.write(Data("upload failed: \(failure)\n".utf8))
    exit(1)
}
FileHandle.standardOutput.write(outcome.body)
FileHandle.standardError.write(Data("HTTP \(outcome.status)\n".utf8))
exit(outcome.status == 201 ? 0 : 3)
