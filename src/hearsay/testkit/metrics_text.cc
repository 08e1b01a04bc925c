// Prometheus text format parsing (see the header).
#include "hearsay/testkit/metrics_text.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace hearsay::testkit {
namespace {

bool IsNameChar(char c, bool first) {
  const bool alpha = std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':';
  return first ? alpha : alpha || std::isdigit(static_cast<unsigned char>(c));
}

Status LineError(size_t line_no, std::string_view line, std::string_view what) {
  return InvalidArgumentError("metrics line " + std::to_string(line_no) + ": " + std::string(what) +
                              ": '" + std::string(line.substr(0, 120)) + "'");
}

// Parses `{a="x",b="y"}` starting at line[*pos] == '{'; leaves *pos after the '}'.
bool ParseLabels(std::string_view line, size_t* pos, MetricLabels* labels) {
  size_t i = *pos + 1;
  while (true) {
    while (i < line.size() && line[i] == ' ') ++i;
    if (i < line.size() && line[i] == '}') {
      *pos = i + 1;
      return true;
    }
    const size_t name_start = i;
    while (i < line.size() && IsNameChar(line[i], i == name_start)) ++i;
    if (i == name_start || i >= line.size() || line[i] != '=') return false;
    std::string name(line.substr(name_start, i - name_start));
    ++i;
    if (i >= line.size() || line[i] != '"') return false;
    ++i;
    std::string value;
    while (true) {
      if (i >= line.size()) return false;
      const char c = line[i++];
      if (c == '"') break;
      if (c == '\\') {
        if (i >= line.size()) return false;
        const char e = line[i++];
        value.push_back(e == 'n' ? '\n' : e);
      } else {
        value.push_back(c);
      }
    }
    (*labels)[std::move(name)] = std::move(value);
    while (i < line.size() && line[i] == ' ') ++i;
    if (i < line.size() && line[i] == ',') ++i;
  }
}

bool ParseValue(std::string_view text, double* out) {
  if (text == "+Inf" || text == "Inf") {
    *out = std::numeric_limits<double>::infinity();
    return true;
  }
  if (text == "-Inf") {
    *out = -std::numeric_limits<double>::infinity();
    return true;
  }
  if (text == "NaN") {
    *out = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  const std::string s(text);
  char* end = nullptr;
  *out = std::strtod(s.c_str(), &end);
  return !s.empty() && end == s.c_str() + s.size() && std::isfinite(*out);
}

}  // namespace

Result<std::vector<MetricSample>> ParsePrometheusText(std::string_view text) {
  std::vector<MetricSample> samples;
  size_t line_no = 0;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    size_t i = 0;
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i == line.size() || line[i] == '#') continue;
    MetricSample sample;
    const size_t name_start = i;
    while (i < line.size() && IsNameChar(line[i], i == name_start)) ++i;
    if (i == name_start) return LineError(line_no, line, "no metric name");
    sample.name.assign(line.substr(name_start, i - name_start));
    if (i < line.size() && line[i] == '{' && !ParseLabels(line, &i, &sample.labels)) {
      return LineError(line_no, line, "malformed labels");
    }
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    std::string_view rest = line.substr(i);
    std::string_view value = rest.substr(0, rest.find_first_of(" \t"));  // a timestamp may follow
    if (!ParseValue(value, &sample.value)) return LineError(line_no, line, "bad value");
    samples.push_back(std::move(sample));
  }
  return samples;
}

double SumMetric(const std::vector<MetricSample>& samples, std::string_view name,
                 const MetricLabels& match) {
  double sum = 0;
  for (const MetricSample& s : samples) {
    if (s.name != name) continue;
    bool all = true;
    for (const auto& [k, v] : match) {
      auto it = s.labels.find(k);
      if (it == s.labels.end() || it->second != v) {
        all = false;
        break;
      }
    }
    if (all) sum += s.value;
  }
  return sum;
}

std::optional<double> FindMetric(const std::vector<MetricSample>& samples, std::string_view name,
                                 const MetricLabels& labels) {
  for (const MetricSample& s : samples) {
    if (s.name == name && s.labels == labels) return s.value;
  }
  return std::nullopt;
}

}  // namespace hearsay::testkit
