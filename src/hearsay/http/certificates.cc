#include "hearsay/http/certificates.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>

namespace hearsay::http {

namespace {

struct Free {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
  void operator()(X509* p) const { X509_free(p); }
  void operator()(BIO* p) const { BIO_free(p); }
  void operator()(GENERAL_NAMES* p) const { GENERAL_NAMES_free(p); }
  void operator()(X509_EXTENSION* p) const { X509_EXTENSION_free(p); }
};
template <typename T>
using Owned = std::unique_ptr<T, Free>;

std::string OpenSslError(std::string_view what) {
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  std::string msg(what);
  if (e != 0) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    msg += ": ";
    msg += buf;
  }
  return msg;
}

Owned<EVP_PKEY> NewKey() { return Owned<EVP_PKEY>(EVP_EC_gen("P-256")); }

Result<std::string> PemOf(X509* cert) {
  Owned<BIO> bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_X509(bio.get(), cert) != 1) {
    return InternalError(OpenSslError("cannot write a certificate"));
  }
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

Result<std::string> PemOf(EVP_PKEY* key) {
  Owned<BIO> bio(BIO_new(BIO_s_mem()));
  if (!bio ||
      PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return InternalError(OpenSslError("cannot write a private key"));
  }
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

Owned<BIO> ReadBio(std::string_view pem) {
  return Owned<BIO>(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

// A certificate with a random serial, `subject` as CN, the validity and `key`'s public half.
Result<Owned<X509>> NewCertificate(std::string_view cn, const Validity& v, EVP_PKEY* key) {
  Owned<X509> cert(X509_new());
  if (!cert) return InternalError(OpenSslError("X509_new"));
  X509_set_version(cert.get(), 2);  // v3
  unsigned char serial[16];
  if (RAND_bytes(serial, sizeof(serial)) != 1) return InternalError(OpenSslError("RAND_bytes"));
  serial[0] &= 0x7f;  // positive
  BIGNUM* bn = BN_bin2bn(serial, sizeof(serial), nullptr);
  if (bn == nullptr || BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get())) == nullptr) {
    BN_free(bn);
    return InternalError(OpenSslError("serial"));
  }
  BN_free(bn);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), static_cast<long>(v.from_s));
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), static_cast<long>(v.from_s + v.for_s));
  X509_NAME* name = X509_get_subject_name(cert.get());
  if (X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                                 reinterpret_cast<const unsigned char*>(cn.data()),
                                 static_cast<int>(cn.size()), -1, 0) != 1) {
    return InvalidArgumentError(OpenSslError("bad subject name"));
  }
  if (X509_set_pubkey(cert.get(), key) != 1) return InternalError(OpenSslError("public key"));
  return cert;
}

Status AddExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  Owned<X509_EXTENSION> ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str()));
  if (!ext || X509_add_ext(cert, ext.get(), -1) != 1) {
    return InvalidArgumentError(OpenSslError("bad extension '" + value + "'"));
  }
  return OkStatus();
}

bool ValidDnsName(std::string_view name) {
  if (name.empty() || name.size() > 253) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '.' || c == '*';
    if (!ok) return false;
  }
  return true;
}

bool ValidIp(std::string_view ip) {
  if (ip.empty() || ip.size() > 45) return false;
  for (char c : ip) {
    const bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') ||
                    c == '.' || c == ':';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

bool ValidCertificateNodeId(std::string_view node_id) {
  if (node_id.empty() || node_id.size() > 128) return false;
  for (char c : node_id) {
    if (c <= ' ' || c > '~' || c == ',') return false;
  }
  return true;
}

Result<PemPair> MakeCertificateAuthority(std::string_view name, Validity validity) {
  if (name.empty() || name.size() > 64) return InvalidArgumentError("CA name: 1..64 bytes");
  Owned<EVP_PKEY> key = NewKey();
  if (!key) return InternalError(OpenSslError("cannot make a key"));
  HEARSAY_ASSIGN_OR_RETURN(Owned<X509> cert, NewCertificate(name, validity, key.get()));
  X509_set_issuer_name(cert.get(), X509_get_subject_name(cert.get()));
  HEARSAY_RETURN_IF_ERROR(
      AddExtension(cert.get(), cert.get(), NID_basic_constraints, "critical,CA:TRUE,pathlen:0"));
  HEARSAY_RETURN_IF_ERROR(
      AddExtension(cert.get(), cert.get(), NID_key_usage, "critical,keyCertSign,cRLSign"));
  HEARSAY_RETURN_IF_ERROR(AddExtension(cert.get(), cert.get(), NID_subject_key_identifier, "hash"));
  if (X509_sign(cert.get(), key.get(), EVP_sha256()) == 0) {
    return InternalError(OpenSslError("cannot sign the CA certificate"));
  }
  PemPair out;
  HEARSAY_ASSIGN_OR_RETURN(out.cert, PemOf(cert.get()));
  HEARSAY_ASSIGN_OR_RETURN(out.key, PemOf(key.get()));
  return out;
}

Result<PemPair> IssueNodeCertificate(const PemPair& ca, const NodeCertificateRequest& request) {
  if (!ValidCertificateNodeId(request.node_id)) {
    return InvalidArgumentError("node id: 1..128 printable ASCII bytes without spaces or commas");
  }
  std::string san = "URI:" + std::string(kNodeUriPrefix) + request.node_id;
  for (const std::string& dns : request.dns_names) {
    if (!ValidDnsName(dns)) return InvalidArgumentError("bad DNS name '" + dns + "'");
    san += ",DNS:" + dns;
  }
  for (const std::string& ip : request.ip_addresses) {
    if (!ValidIp(ip)) return InvalidArgumentError("bad IP address '" + ip + "'");
    san += ",IP:" + ip;
  }
  Owned<BIO> cert_bio = ReadBio(ca.cert);
  Owned<X509> ca_cert(PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr));
  if (!ca_cert) return InvalidArgumentError(OpenSslError("the CA certificate does not parse"));
  Owned<BIO> key_bio = ReadBio(ca.key);
  Owned<EVP_PKEY> ca_key(PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
  if (!ca_key) return InvalidArgumentError(OpenSslError("the CA key does not parse"));
  if (X509_check_private_key(ca_cert.get(), ca_key.get()) != 1) {
    ERR_clear_error();
    return InvalidArgumentError("the CA key does not belong to the CA certificate");
  }

  Owned<EVP_PKEY> key = NewKey();
  if (!key) return InternalError(OpenSslError("cannot make a key"));
  // X.509 bounds a CN to 64 characters; the URI SAN carries the whole id.
  HEARSAY_ASSIGN_OR_RETURN(
      Owned<X509> cert,
      NewCertificate(std::string_view(request.node_id).substr(0, 64), request.validity, key.get()));
  X509_set_issuer_name(cert.get(), X509_get_subject_name(ca_cert.get()));
  X509* c = cert.get();
  HEARSAY_RETURN_IF_ERROR(AddExtension(c, ca_cert.get(), NID_basic_constraints, "CA:FALSE"));
  HEARSAY_RETURN_IF_ERROR(
      AddExtension(c, ca_cert.get(), NID_key_usage, "critical,digitalSignature"));
  HEARSAY_RETURN_IF_ERROR(
      AddExtension(c, ca_cert.get(), NID_ext_key_usage, "serverAuth,clientAuth"));
  HEARSAY_RETURN_IF_ERROR(AddExtension(c, ca_cert.get(), NID_subject_alt_name, san));
  HEARSAY_RETURN_IF_ERROR(AddExtension(c, ca_cert.get(), NID_authority_key_identifier, "keyid"));
  if (X509_sign(c, ca_key.get(), EVP_sha256()) == 0) {
    return InternalError(OpenSslError("cannot sign the node certificate"));
  }
  PemPair out;
  HEARSAY_ASSIGN_OR_RETURN(out.cert, PemOf(c));
  HEARSAY_ASSIGN_OR_RETURN(out.key, PemOf(key.get()));
  return out;
}

std::string NodeIdOf(X509* cert) {
  if (cert == nullptr) return {};
  Owned<GENERAL_NAMES> names(
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr)));
  if (names) {
    for (int i = 0; i < sk_GENERAL_NAME_num(names.get()); ++i) {
      const GENERAL_NAME* n = sk_GENERAL_NAME_value(names.get(), i);
      if (n->type != GEN_URI) continue;
      const ASN1_IA5STRING* uri = n->d.uniformResourceIdentifier;
      std::string_view v(reinterpret_cast<const char*>(ASN1_STRING_get0_data(uri)),
                         static_cast<size_t>(ASN1_STRING_length(uri)));
      if (v.substr(0, kNodeUriPrefix.size()) == kNodeUriPrefix) {
        return std::string(v.substr(kNodeUriPrefix.size()));
      }
    }
  }
  X509_NAME* subject = X509_get_subject_name(cert);
  const int at = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
  if (at < 0) return {};
  const ASN1_STRING* cn = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, at));
  return std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(cn)),
                     static_cast<size_t>(ASN1_STRING_length(cn)));
}

Result<std::string> NodeIdOfPem(std::string_view pem) {
  Owned<BIO> bio = ReadBio(pem);
  Owned<X509> cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  if (!cert) return InvalidArgumentError(OpenSslError("the certificate does not parse"));
  return NodeIdOf(cert.get());
}

}  // namespace hearsay::http
