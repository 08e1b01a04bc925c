// The web console every node serves at GET / (console.html beside this file, embedded in the
// binary at build time by cmake/EmbedText.cmake). The page polls the node's GET /status.
// Thread-safety: returns a view of static data.
#pragma once

#include <string_view>

namespace hearsay::net {

// The console's HTML, CSS and JavaScript: one self-contained page.
std::string_view ConsoleHtml();

}  // namespace hearsay::net
