// MeasureJson: a byte loop with a stack of open containers (one bit each: array or object).
#include "hearsay/api/request_budget.h"

#include <string>
#include <vector>

namespace hearsay::api {
namespace {

bool IsNumberChar(char c) {
  return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

bool Over(const JsonShape& s, const Budget& b) {
  return s.members > b.max_members || s.array_items > b.max_array_items || s.depth > b.max_depth ||
         s.longest_number > b.max_number_chars;
}

ApiError TooComplex(std::string what, size_t limit) {
  return InvalidRequest({},
                        "The request body is too complex for this server: it has more than " +
                            std::to_string(limit) + " " + what + ".",
                        "request_too_complex");
}

}  // namespace

JsonShape MeasureJson(std::string_view body, const Budget& budget) {
  JsonShape shape;
  std::vector<bool> in_array;  // the open containers, innermost last
  bool in_string = false;
  bool array_opened = false;  // the last token was '[': the next value is an element
  size_t number_run = 0;
  for (size_t i = 0; i < body.size(); ++i) {
    ++shape.steps;
    const char c = body[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (IsNumberChar(c)) {
      if (++number_run > shape.longest_number) shape.longest_number = number_run;
    } else {
      number_run = 0;
    }
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    if (array_opened && c != ']') ++shape.array_items;
    array_opened = false;
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '[':
      case '{':
        in_array.push_back(c == '[');
        array_opened = c == '[';
        if (in_array.size() > shape.depth) shape.depth = in_array.size();
        break;
      case ']':
      case '}':
        if (!in_array.empty()) in_array.pop_back();
        break;
      case ':':
        ++shape.members;
        break;
      case ',':
        if (!in_array.empty() && in_array.back()) ++shape.array_items;
        break;
      default:
        break;
    }
    if (Over(shape, budget)) break;
  }
  return shape;
}

std::optional<ApiError> CheckBudget(std::string_view body, const Budget& budget) {
  const JsonShape s = MeasureJson(body, budget);
  if (s.depth > budget.max_depth) {
    return InvalidRequest({},
                          "We could not parse the JSON body of your request: it nests arrays "
                          "and objects more than " +
                              std::to_string(budget.max_depth) + " levels deep.",
                          "invalid_json");
  }
  if (s.members > budget.max_members) {
    return TooComplex("object members in total", budget.max_members);
  }
  if (s.array_items > budget.max_array_items) {
    return TooComplex("array elements in total", budget.max_array_items);
  }
  if (s.longest_number > budget.max_number_chars) {
    return TooComplex("characters in one number", budget.max_number_chars);
  }
  return std::nullopt;
}

}  // namespace hearsay::api
