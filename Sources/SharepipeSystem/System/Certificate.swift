import CCrypto
import Foundation

/// What `doctor` says of a TLS certificate and key (PEM), read with libcrypto.
package struct CertificateSummary: Sendable, Equatable {
    /// The certificate's subject, one line.
    package var subject: String
    /// When it stops being valid.
    package var notAfter: Date
    /// Whether the key is the certificate's.
    package var keyMatches: Bool

    /// Reads both PEM texts; nil for either when it does not parse.
    package static func read(certificatePEM: String, keyPEM: String) -> Result<CertificateSummary, ShareError> {
        let certificate: OpaquePointer? = certificatePEM.withCString { text in
            guard let bio = BIO_new_mem_buf(text, -1) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_X509(bio, nil, nil, nil)
        }
        guard let certificate else { return .failure(ShareError(.io, "the certificate is not a PEM X.509 certificate")) }
        defer { X509_free(certificate) }
        let key: OpaquePointer? = keyPEM.withCString { text in
            guard let bio = BIO_new_mem_buf(text, -1) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, nil, nil)
        }
        guard let key else { return .failure(ShareError(.io, "the key is not a PEM private key (or it is encrypted)")) }
        defer { EVP_PKEY_free(key) }
        var subject = [CChar](repeating: 0, count: 256)
        X509_NAME_oneline(X509_get_subject_name(certificate), &subject, Int32(subject.count))
        var days: Int32 = 0
        var seconds: Int32 = 0
        // The distance from now to notAfter; negative once it has passed.
        ASN1_TIME_diff(&days, &seconds, nil, X509_get0_notAfter(certificate))
        let notAfter = Date().addingTimeInterval(Double(days) * 86_400 + Double(seconds))
        let name = String(decoding: subject.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return .success(CertificateSummary(
            subject: name, notAfter: notAfter, keyMatches: X509_check_private_key(certificate, key) == 1))
    }
}
