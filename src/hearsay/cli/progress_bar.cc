#include "hearsay/cli/progress_bar.h"

#include <algorithm>
#include <cstdio>

namespace hearsay::cli {

void ProgressBar::Update(const loadgen::Progress& p) {
  if (!enabled_) return;
  double fraction = 0;
  if (p.total > 0) {
    fraction = static_cast<double>(p.finished) / static_cast<double>(p.total);
  } else if (p.duration > Duration::zero()) {
    fraction = ToSeconds(p.elapsed) / ToSeconds(p.duration);
  }
  fraction = std::clamp(fraction, 0.0, 1.0);
  if (!terminal_) {
    const int tenths = static_cast<int>(fraction * 10);
    if (tenths <= tenths_printed_) return;
    tenths_printed_ = tenths;
    std::fprintf(stderr, "%s: %3d%%  %llu done, %llu failed, %.1f s\n", label_.c_str(), tenths * 10,
                 static_cast<unsigned long long>(p.finished),
                 static_cast<unsigned long long>(p.failed), ToSeconds(p.elapsed));
    std::fflush(stderr);
    return;
  }
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(fraction * kWidth);
  std::string bar(static_cast<size_t>(filled), '#');
  bar.resize(kWidth, '.');
  std::fprintf(stderr, "\r  %-13s [%s] %5llu done %4llu failed %6.1f s", label_.c_str(),
               bar.c_str(), static_cast<unsigned long long>(p.finished),
               static_cast<unsigned long long>(p.failed), ToSeconds(p.elapsed));
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressBar::Finish() {
  if (!drawn_) return;
  std::fprintf(stderr, "\r%78s\r", "");
  std::fflush(stderr);
  drawn_ = false;
}

}  // namespace hearsay::cli
