#pragma once

/// @file
/// A throwaway certificate authority for tests and demos of mutual TLS
/// (docs/behaviour/peer-authentication.md#tls): a CA key and self-signed certificate made
/// with the `openssl` command-line tool (Debian's `openssl`) in a temporary directory that
/// the destructor removes, issuing certificates fit for both ends of a connection.

#include <string>

namespace cafmesh::testing {

/// The three files of `network.tls_*` for one process.
struct tls_files {
  std::string certificate_file; ///< its certificate (PEM)
  std::string key_file;         ///< its private key (PEM, unencrypted)
  std::string ca_file;          ///< the CA certificate it trusts (PEM)

  /// `, "tls_certificate_file": "...", "tls_key_file": "...", "tls_ca_file": "..."`: the
  /// members of a configuration's `network` object, each preceded by a comma.
  std::string network_members() const;
};

/// A certificate authority in its own temporary directory; see the file comment.
class tls_authority {
public:
  /// Makes a CA named `name` (an EC P-256 key and a self-signed certificate valid for two
  /// days). Throws `std::runtime_error` (with the tool's output) if `openssl` fails.
  explicit tls_authority(const std::string& name = "cafmesh-test-ca");

  /// Removes the directory and every file issued.
  ~tls_authority();

  tls_authority(const tls_authority&) = delete;
  tls_authority& operator=(const tls_authority&) = delete;

  /// Issues a certificate for common name `name` (a file-name-safe word), signed by this
  /// CA, with extended key usage serverAuth and clientAuth; its files trust this CA. Throws
  /// `std::runtime_error` if `openssl` fails.
  tls_files issue(const std::string& name);

  /// The CA certificate (PEM).
  std::string ca_file() const {
    return dir_ + "/ca.crt";
  }

  /// The directory holding the CA and every issued file.
  const std::string& directory() const {
    return dir_;
  }

private:
  std::string dir_;
};

} // namespace cafmesh::testing
