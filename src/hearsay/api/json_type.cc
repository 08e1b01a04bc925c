// JSON type names for error messages.
#include "hearsay/api/json_type.h"

#include <nlohmann/json.hpp>

namespace hearsay::api {

std::string_view JsonTypeName(const nlohmann::json& value) {
  using T = nlohmann::json::value_t;
  switch (value.type()) {
    case T::null:
      return "null";
    case T::object:
      return "an object";
    case T::array:
      return "an array";
    case T::string:
      return "a string";
    case T::boolean:
      return "a boolean";
    case T::number_integer:
    case T::number_unsigned:
      return "an integer";
    case T::number_float:
      return "a number";
    case T::binary:
      return "binary data";
    case T::discarded:
      break;
  }
  return "an invalid value";
}

}  // namespace hearsay::api
