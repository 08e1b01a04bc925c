// ProgressBar: a one-line progress display on stderr for load runs (`hearsay bench`, `hearsay
// demo`), redrawn in place. Disabled (draws nothing) when stderr is not a terminal, so logs and
// pipes stay clean.
//
// Thread-safety: none; Update and Finish from the thread running the load.
#pragma once

#include <string>

#include "hearsay/loadgen/load_run.h"

namespace hearsay::cli {

class ProgressBar {
 public:
  ProgressBar(std::string label, bool enabled) : label_(std::move(label)), enabled_(enabled) {}

  // Redraws the bar: by requests when the run has a count bound, else by elapsed time.
  void Update(const loadgen::Progress& progress);
  // Erases the bar (if one was drawn).
  void Finish();
  void set_label(std::string label) { label_ = std::move(label); }

 private:
  std::string label_;
  bool enabled_;
  bool drawn_ = false;
};

}  // namespace hearsay::cli
