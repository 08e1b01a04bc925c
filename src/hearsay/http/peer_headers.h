// The names of the peer protocol's HTTP headers: what a forwarding node adds to a request it
// sends to a peer, and what the serving node adds to its answer. http::PeerClient writes the
// request headers and reads the answer's; the daemon reads the request headers and writes the
// answer's (net/completion_sink.cc). Names are lower case (HTTP header names are
// case-insensitive; Beast matches them so).
// Thread-safety: constants.
#pragma once

#include <string_view>

namespace hearsay::http {

// Request headers of a forward.
// Marks a forwarded request: the receiver serves it and never forwards it again.
inline constexpr std::string_view kHopHeader = "x-hearsay-hop";
// The sender's proof of cluster membership (net/peer_auth.h; its text form:
// http/peer_auth_header.h); absent on --insecure clusters.
inline constexpr std::string_view kPeerAuthHeader = "x-hearsay-peer-auth";
// The forwarding node's id, for the receiver's logs.
inline constexpr std::string_view kOriginHeader = "x-hearsay-origin";
// The forwarding node's id for the request, for decision records: informational, never trusted.
inline constexpr std::string_view kRequestIdHeader = "x-hearsay-request-id";
// The tenant the request is served for (net/api_keys.h), bound into the peer authenticator: the
// receiver trusts it only with a valid one, and never from a client.
inline constexpr std::string_view kTenantHeader = "x-hearsay-tenant";
// Late binding: serve only if the wait is below this many ms, else answer unserved
// (http/bounce_header.h has its text form).
inline constexpr std::string_view kBounceAboveHeader = "x-hearsay-bounce-above-ms";

// Response headers of the serving node (sent on every answer, forwarded or not).
inline constexpr std::string_view kPromptTokensHeader = "x-hearsay-prompt-tokens";
inline constexpr std::string_view kCachedTokensHeader = "x-hearsay-cached-tokens";
// The id of the node that served the request.
inline constexpr std::string_view kNodeHeader = "x-hearsay-node";

// Response headers of every answer to a client (docs/operations.md#response-headers).
// The node whose engine served the request (the entry node itself for an answer it made without
// an engine: an error, /health, /metrics).
inline constexpr std::string_view kServedByHeader = "x-hearsay-served-by";
// The node the client sent the request to.
inline constexpr std::string_view kEntryHeader = "x-hearsay-entry";

}  // namespace hearsay::http
