// ProgressBar: a one-line progress display on stderr for load runs (`hearsay bench`, `hearsay
// demo`). On a terminal it is redrawn in place; otherwise (a log, a pipe) it prints a plain line
// at each tenth of the run, so a long run still shows it is alive without flooding the log.
//
// Thread-safety: none; Update and Finish from the thread running the load.
#pragma once

#include <string>

#include "hearsay/loadgen/load_run.h"

namespace hearsay::cli {

class ProgressBar {
 public:
  // `terminal`: redraw in place; else print a plain line per tenth of the run. `enabled` false
  // draws nothing at all.
  ProgressBar(std::string label, bool terminal, bool enabled = true)
      : label_(std::move(label)), terminal_(terminal), enabled_(enabled) {}

  // Redraws the bar: by requests when the run has a count bound, else by elapsed time.
  void Update(const loadgen::Progress& progress);
  // Erases the bar (if one was drawn).
  void Finish();
  void set_label(std::string label) { label_ = std::move(label); }

 private:
  std::string label_;
  bool terminal_;
  bool enabled_;
  int tenths_printed_ = 0;  // plain mode: the last tenth of the run a line was printed for
  bool drawn_ = false;
};

}  // namespace hearsay::cli
