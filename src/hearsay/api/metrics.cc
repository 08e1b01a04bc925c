// The metrics registry over prometheus-cpp, with its registration checks.
#include "hearsay/api/metrics.h"

#include <prometheus/check_names.h>
#include <prometheus/text_serializer.h>

#include <cmath>
#include <type_traits>

#include "hearsay/common/check.h"

namespace hearsay::api {

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

namespace {

// prometheus-cpp's builder for metric type T.
template <typename T>
auto BuilderFor() {
  if constexpr (std::is_same_v<T, Counter>) {
    return prometheus::BuildCounter();
  } else if constexpr (std::is_same_v<T, Gauge>) {
    return prometheus::BuildGauge();
  } else {
    static_assert(std::is_same_v<T, Histogram>);
    return prometheus::BuildHistogram();
  }
}

}  // namespace

MetricsRegistry::MetricsRegistry() = default;
MetricsRegistry::~MetricsRegistry() = default;

template <typename T>
prometheus::Family<T>& MetricsRegistry::FamilyFor(std::string_view name, std::string_view help,
                                                  const Labels& labels) {
  const std::string name_text(name);
  HEARSAY_CHECK_MSG(prometheus::CheckMetricName(name_text), "invalid metric name: " + name_text);
  HEARSAY_CHECK_MSG(help.find_first_of("\n\\") == std::string_view::npos,
                    "HELP text of " + name_text + " needs escaping");
  for (const auto& [label, value] : labels) {
    HEARSAY_CHECK_MSG(prometheus::CheckLabelName(label), "invalid label name: " + label);
    HEARSAY_CHECK_MSG(T::metric_type != prometheus::MetricType::Histogram || label != "le",
                      "a histogram may not use label le");
  }
  const auto [it, added] = known_.try_emplace(name_text, Known{T::metric_type, std::string(help)});
  HEARSAY_CHECK_MSG(added || (it->second.type == T::metric_type && it->second.help == help),
                    "metric " + name_text + " re-registered with another type or help");
  prometheus::Family<T>& family =
      BuilderFor<T>().Name(name_text).Help(std::string(help)).Register(registry_);
  HEARSAY_CHECK_MSG(!family.Has(labels),
                    "metric " + name_text + " registered twice with the same labels");
  return family;
}

Counter& MetricsRegistry::AddCounter(std::string_view name, std::string_view help,
                                     const Labels& labels) {
  std::lock_guard lock(mu_);
  return FamilyFor<Counter>(name, help, labels).Add(labels);
}

Gauge& MetricsRegistry::AddGauge(std::string_view name, std::string_view help,
                                 const Labels& labels) {
  std::lock_guard lock(mu_);
  return FamilyFor<Gauge>(name, help, labels).Add(labels);
}

Histogram& MetricsRegistry::AddHistogram(std::string_view name, std::string_view help,
                                         const std::vector<double>& buckets, const Labels& labels) {
  for (size_t i = 0; i < buckets.size(); ++i) {
    HEARSAY_CHECK_MSG(std::isfinite(buckets[i]), "histogram bounds must be finite");
    HEARSAY_CHECK_MSG(i == 0 || buckets[i - 1] < buckets[i],
                      "histogram bounds must be strictly increasing");
  }
  std::lock_guard lock(mu_);
  return FamilyFor<Histogram>(name, help, labels).Add(labels, buckets);
}

std::string MetricsRegistry::Render() const {
  return prometheus::TextSerializer().Serialize(registry_.Collect());
}

}  // namespace hearsay::api
