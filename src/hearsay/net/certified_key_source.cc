#include "hearsay/net/certified_key_source.h"

#include <sodium.h>

#include <nlohmann/json.hpp>

#include "hearsay/gossip/state_signing.h"

namespace hearsay::net {

CertifiedKeySource::CertifiedKeySource(Fetch fetch, std::function<TimePoint()> now,
                                       Duration retry_after)
    : fetch_(std::move(fetch)), now_(std::move(now)), retry_after_(retry_after) {}

std::string CertifiedKeySource::ConfirmedKey(const NodeId& id, Generation generation,
                                             const Address& api_address) {
  auto& [g, entry] = state_->entries[id];
  if (g > generation) return {};  // an older life of the member: its key no longer matters
  if (g < generation) {
    g = generation;
    entry = Entry{};
  }
  if (!entry.key.empty()) return entry.key;
  if (entry.in_flight || api_address.empty() || now_() < entry.next_try) return {};
  entry.in_flight = true;
  ++state_->stats.fetches;
  std::weak_ptr<State> weak = state_;
  const TimePoint retry_at = now_() + retry_after_;
  fetch_(id, api_address, [weak, id, generation, retry_at](Result<std::string> body) {
    std::shared_ptr<State> state = weak.lock();
    if (!state) return;
    auto it = state->entries.find(id);
    if (it == state->entries.end() || it->second.first != generation) return;
    Entry& e = it->second.second;
    e.in_flight = false;
    Result<std::string> key =
        body.ok() ? KeyFromHealth(*body, id, generation) : Result<std::string>(body.status());
    if (key.ok()) {
      e.key = *std::move(key);
      ++state->stats.confirmed;
    } else {
      e.next_try = retry_at;
      ++state->stats.refused;
    }
  });
  return {};
}

Result<std::string> CertifiedKeySource::KeyFromHealth(std::string_view body, const NodeId& id,
                                                      Generation generation) {
  const nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return InvalidArgumentError("health: not a JSON object");
  auto text = [&](const char* field) -> std::string {
    auto it = j.find(field);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  if (text("node") != id) return InvalidArgumentError("health: names another node");
  if (text("generation") != std::to_string(generation)) {
    return InvalidArgumentError("health: names another generation");
  }
  const std::string b64 = text("signing_key");
  std::string key(gossip::kSigningPublicKeyBytes, '\0');
  size_t len = 0;
  if (sodium_base642bin(reinterpret_cast<unsigned char*>(key.data()), key.size(), b64.data(),
                        b64.size(), nullptr, &len, nullptr, sodium_base64_VARIANT_ORIGINAL) != 0 ||
      len != key.size()) {
    return InvalidArgumentError("health: no valid signing_key");
  }
  return key;
}

std::string CertifiedKeySource::EncodeKey(std::string_view key) {
  std::string out(sodium_base64_ENCODED_LEN(key.size(), sodium_base64_VARIANT_ORIGINAL), '\0');
  sodium_bin2base64(out.data(), out.size(), reinterpret_cast<const unsigned char*>(key.data()),
                    key.size(), sodium_base64_VARIANT_ORIGINAL);
  out.resize(out.size() - 1);  // the terminating NUL
  return out;
}

}  // namespace hearsay::net
