// MeasureJson: nlohmann's SAX parser with a handler that only counts, and stops the parse (returns
// false) at the first count over its budget. nlohmann's parser keeps its nesting on a heap stack
// (no recursion) and its lexer reads each byte once, so the pass is linear in the bytes it reads,
// which the input iterator counts.
#include "hearsay/api/request_budget.h"

#include <cstdint>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace hearsay::api {
namespace {

using nlohmann::json;

bool Over(const JsonShape& s, const Budget& b) {
  return s.members > b.max_members || s.array_items > b.max_array_items || s.depth > b.max_depth ||
         s.longest_number > b.max_number_chars;
}

// Characters of a JSON integer's text: JSON has no leading zeros and no '+', so its value fixes
// them. The lexer reports an integer written with a minus sign ("-0" included) as signed.
size_t DigitsOf(uint64_t v) {
  size_t n = 1;
  while (v >= 10) {
    v /= 10;
    ++n;
  }
  return n;
}

// A byte cursor that counts the bytes the parser reads (JsonShape::steps).
class CountingCursor {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  CountingCursor(const char* p, size_t* reads) : p_(p), reads_(reads) {}
  reference operator*() const { return *p_; }
  CountingCursor& operator++() {
    ++p_;
    ++*reads_;
    return *this;
  }
  CountingCursor operator++(int) {
    CountingCursor before = *this;
    ++*this;
    return before;
  }
  bool operator==(const CountingCursor& o) const { return p_ == o.p_; }
  bool operator!=(const CountingCursor& o) const { return p_ != o.p_; }

 private:
  const char* p_;
  size_t* reads_;
};

// Counts members, array elements, depth and number length; false (stop) once over the budget.
// Invariant: in_array_ holds one entry per open container, innermost last, and its size never
// passes budget.max_depth + 1 (the parse stops there).
class BudgetSax final : public nlohmann::json_sax<json> {
 public:
  BudgetSax(const Budget& budget, JsonShape* shape) : budget_(budget), shape_(*shape) {}

  bool null() override { return Value(); }
  bool boolean(bool) override { return Value(); }
  bool number_integer(number_integer_t v) override {
    // -v without overflow for INT64_MIN.
    return Number(1 + DigitsOf(uint64_t{0} - static_cast<uint64_t>(v)));
  }
  bool number_unsigned(number_unsigned_t v) override { return Number(DigitsOf(v)); }
  bool number_float(number_float_t, const string_t& text) override { return Number(text.size()); }
  bool string(string_t&) override { return Value(); }
  bool binary(binary_t&) override { return Value(); }
  bool start_object(std::size_t) override { return Open(false); }
  bool start_array(std::size_t) override { return Open(true); }
  bool end_object() override { return Close(); }
  bool end_array() override { return Close(); }
  bool key(string_t&) override {
    ++shape_.members;
    return Event();
  }
  bool parse_error(std::size_t, const std::string& token,
                   const nlohmann::detail::exception& e) override {
    // A number too large for a double is a parse error (406), not a number_float event: it
    // still counts as a number of the token's length.
    if (e.id == 406) Number(token.size());
    return false;  // malformed: left for the parser to report
  }

 private:
  bool Event() {
    ++shape_.events;
    return !Over(shape_, budget_);
  }
  // A value starts: an element if the innermost container is an array.
  bool Value() {
    if (!in_array_.empty() && in_array_.back()) ++shape_.array_items;
    return Event();
  }
  bool Number(size_t chars) {
    if (chars > shape_.longest_number) shape_.longest_number = chars;
    return Value();
  }
  bool Open(bool is_array) {
    if (!in_array_.empty() && in_array_.back()) ++shape_.array_items;
    in_array_.push_back(is_array);
    if (in_array_.size() > shape_.depth) shape_.depth = in_array_.size();
    return Event();
  }
  bool Close() {
    if (!in_array_.empty()) in_array_.pop_back();
    return Event();
  }

  const Budget& budget_;
  JsonShape& shape_;
  std::vector<bool> in_array_;
};

ApiError TooComplex(std::string what, size_t limit) {
  return InvalidRequest({},
                        "The request body is too complex for this server: it has more than " +
                            std::to_string(limit) + " " + what + ".",
                        "request_too_complex");
}

}  // namespace

JsonShape MeasureJson(std::string_view body, const Budget& budget) {
  JsonShape shape;
  BudgetSax sax(budget, &shape);
  // The parse's result is in `shape`: a stop (over budget) and a syntax error both end it early.
  json::sax_parse(CountingCursor(body.data(), &shape.steps),
                  CountingCursor(body.data() + body.size(), &shape.steps), &sax);
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
