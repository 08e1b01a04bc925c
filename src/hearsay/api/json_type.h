// Names of JSON value types as they appear in error messages ("a string", "an array", ...).
//
// Thread-safety: pure function.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string_view>

namespace hearsay::api {

// "null", "an object", "an array", "a string", "a boolean", "an integer" or "a number".
std::string_view JsonTypeName(const nlohmann::json& value);

}  // namespace hearsay::api
