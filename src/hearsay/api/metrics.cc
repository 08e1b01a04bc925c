// The metrics registry and its Prometheus text rendering.
#include "hearsay/api/metrics.h"

#include <charconv>
#include <cmath>
#include <variant>

#include "hearsay/common/check.h"

namespace hearsay::api {
namespace {

enum Type { kCounter = 0, kGauge = 1, kHistogram = 2 };

constexpr std::string_view kTypeNames[] = {"counter", "gauge", "histogram"};

bool IsNameStart(char c, bool colon_ok) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon_ok && c == ':');
}

bool IsNameChar(char c, bool colon_ok) {
  return IsNameStart(c, colon_ok) || (c >= '0' && c <= '9');
}

bool IsValidName(std::string_view name, bool colon_ok) {
  if (name.empty() || !IsNameStart(name[0], colon_ok)) return false;
  for (const char c : name) {
    if (!IsNameChar(c, colon_ok)) return false;
  }
  return true;
}

// Shortest text that reads back as `value`; Prometheus spells infinities +Inf/-Inf.
void AppendValue(double value, std::string* out) {
  if (std::isnan(value)) {
    out->append("NaN");
  } else if (std::isinf(value)) {
    out->append(value > 0 ? "+Inf" : "-Inf");
  } else {
    char buf[32];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
    HEARSAY_CHECK(ec == std::errc());
    out->append(buf, end);
  }
}

void AppendEscaped(std::string_view text, bool escape_quote, std::string* out) {
  for (const char c : text) {
    if (c == '\\') {
      out->append("\\\\");
    } else if (c == '\n') {
      out->append("\\n");
    } else if (c == '"' && escape_quote) {
      out->append("\\\"");
    } else {
      out->push_back(c);
    }
  }
}

// {a="x",b="y"} plus an optional trailing le label; nothing when there are no labels at all.
void AppendLabels(const Labels& labels, std::string_view le, std::string* out) {
  if (labels.empty() && le.empty()) return;
  out->push_back('{');
  bool first = true;
  for (const auto& [name, value] : labels) {
    if (!first) out->push_back(',');
    first = false;
    out->append(name);
    out->append("=\"");
    AppendEscaped(value, /*escape_quote=*/true, out);
    out->push_back('"');
  }
  if (!le.empty()) {
    if (!first) out->push_back(',');
    out->append("le=\"");
    out->append(le);
    out->push_back('"');
  }
  out->push_back('}');
}

}  // namespace

struct MetricsRegistry::Family {
  struct Series {
    Labels labels;
    std::variant<std::unique_ptr<Counter>, std::unique_ptr<Gauge>, std::unique_ptr<Histogram>>
        metric;
  };
  std::string name;
  std::string help;
  int type;
  std::vector<Series> series;
};

bool IsValidMetricName(std::string_view name) { return IsValidName(name, /*colon_ok=*/true); }
bool IsValidLabelName(std::string_view name) { return IsValidName(name, /*colon_ok=*/false); }

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(new std::atomic<uint64_t>[bounds_.size() + 1]) {
  for (size_t i = 0; i < bounds_.size(); ++i) {
    HEARSAY_CHECK_MSG(std::isfinite(bounds_[i]), "histogram bounds must be finite");
    HEARSAY_CHECK_MSG(i == 0 || bounds_[i - 1] < bounds_[i],
                      "histogram bounds must be strictly increasing");
  }
  for (size_t i = 0; i <= bounds_.size(); ++i) counts_[i].store(0, std::memory_order_relaxed);
}

void Histogram::Observe(double value) {
  // First bound >= value; NaN compares false everywhere and lands in the overflow bucket.
  size_t lo = 0;
  size_t hi = bounds_.size();
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (bounds_[mid] >= value) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  if (std::isnan(value)) lo = bounds_.size();
  counts_[lo].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(value, std::memory_order_relaxed);
}

uint64_t Histogram::BucketCount(size_t i) const {
  HEARSAY_CHECK(i <= bounds_.size());
  return counts_[i].load(std::memory_order_relaxed);
}

uint64_t Histogram::CumulativeCount(size_t i) const {
  HEARSAY_CHECK(i <= bounds_.size());
  uint64_t total = 0;
  for (size_t k = 0; k <= i; ++k) total += counts_[k].load(std::memory_order_relaxed);
  return total;
}

std::vector<double> ExponentialBuckets(double start, double factor, size_t count) {
  HEARSAY_CHECK(start > 0 && factor > 1 && count >= 1);
  std::vector<double> out;
  out.reserve(count);
  double bound = start;
  for (size_t i = 0; i < count; ++i) {
    out.push_back(bound);
    bound *= factor;
  }
  return out;
}

MetricsRegistry::MetricsRegistry() = default;
MetricsRegistry::~MetricsRegistry() = default;

MetricsRegistry::Family& MetricsRegistry::FamilyFor(std::string_view name, std::string_view help,
                                                    int type, const Labels& labels) {
  HEARSAY_CHECK_MSG(IsValidMetricName(name),
                    std::string("invalid metric name: ") + std::string(name));
  for (size_t i = 0; i < labels.size(); ++i) {
    const std::string& label = labels[i].first;
    HEARSAY_CHECK_MSG(IsValidLabelName(label) && !label.starts_with("__"),
                      "invalid label name: " + label);
    HEARSAY_CHECK_MSG(type != kHistogram || label != "le", "a histogram may not use label le");
    for (size_t k = 0; k < i; ++k) {
      HEARSAY_CHECK_MSG(labels[k].first != label, "repeated label name: " + label);
    }
  }
  for (auto& family : families_) {
    if (family->name != name) continue;
    HEARSAY_CHECK_MSG(family->type == type && family->help == help,
                      "metric " + family->name + " re-registered with another type or help");
    for (const auto& series : family->series) {
      HEARSAY_CHECK_MSG(series.labels != labels,
                        "metric " + family->name + " registered twice with the same labels");
    }
    return *family;
  }
  auto family = std::make_unique<Family>();
  family->name = std::string(name);
  family->help = std::string(help);
  family->type = type;
  families_.push_back(std::move(family));
  return *families_.back();
}

Counter& MetricsRegistry::AddCounter(std::string_view name, std::string_view help, Labels labels) {
  std::lock_guard<std::mutex> lock(mu_);
  Family& family = FamilyFor(name, help, kCounter, labels);
  auto counter = std::make_unique<Counter>();
  Counter& out = *counter;
  family.series.push_back({std::move(labels), std::move(counter)});
  return out;
}

Gauge& MetricsRegistry::AddGauge(std::string_view name, std::string_view help, Labels labels) {
  std::lock_guard<std::mutex> lock(mu_);
  Family& family = FamilyFor(name, help, kGauge, labels);
  auto gauge = std::make_unique<Gauge>();
  Gauge& out = *gauge;
  family.series.push_back({std::move(labels), std::move(gauge)});
  return out;
}

Histogram& MetricsRegistry::AddHistogram(std::string_view name, std::string_view help,
                                         std::vector<double> buckets, Labels labels) {
  std::lock_guard<std::mutex> lock(mu_);
  Family& family = FamilyFor(name, help, kHistogram, labels);
  auto histogram = std::make_unique<Histogram>(std::move(buckets));
  Histogram& out = *histogram;
  family.series.push_back({std::move(labels), std::move(histogram)});
  return out;
}

std::string MetricsRegistry::Render() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  for (const auto& family : families_) {
    out.append("# HELP ");
    out.append(family->name);
    out.push_back(' ');
    AppendEscaped(family->help, /*escape_quote=*/false, &out);
    out.append("\n# TYPE ");
    out.append(family->name);
    out.push_back(' ');
    out.append(kTypeNames[family->type]);
    out.push_back('\n');
    for (const auto& series : family->series) {
      if (const auto* c = std::get_if<std::unique_ptr<Counter>>(&series.metric)) {
        out.append(family->name);
        AppendLabels(series.labels, {}, &out);
        out.push_back(' ');
        out.append(std::to_string((*c)->value()));
        out.push_back('\n');
      } else if (const auto* g = std::get_if<std::unique_ptr<Gauge>>(&series.metric)) {
        out.append(family->name);
        AppendLabels(series.labels, {}, &out);
        out.push_back(' ');
        AppendValue((*g)->value(), &out);
        out.push_back('\n');
      } else {
        const Histogram& h = *std::get<std::unique_ptr<Histogram>>(series.metric);
        // One pass over the buckets so the cumulative counts and _count agree with each other.
        uint64_t cumulative = 0;
        std::string le;
        const auto bounds = h.bounds();
        for (size_t i = 0; i <= bounds.size(); ++i) {
          cumulative += h.BucketCount(i);
          le.clear();
          if (i < bounds.size()) {
            AppendValue(bounds[i], &le);
          } else {
            le = "+Inf";
          }
          out.append(family->name);
          out.append("_bucket");
          AppendLabels(series.labels, le, &out);
          out.push_back(' ');
          out.append(std::to_string(cumulative));
          out.push_back('\n');
        }
        out.append(family->name);
        out.append("_sum");
        AppendLabels(series.labels, {}, &out);
        out.push_back(' ');
        AppendValue(h.sum(), &out);
        out.push_back('\n');
        out.append(family->name);
        out.append("_count");
        AppendLabels(series.labels, {}, &out);
        out.push_back(' ');
        out.append(std::to_string(cumulative));
        out.push_back('\n');
      }
    }
  }
  return out;
}

}  // namespace hearsay::api
