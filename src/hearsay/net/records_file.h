// RecordsFile: a DecisionRecorder (node/decision_record.h) that appends each record to a file as
// one line of JSON. Lines are written as they come (line-buffered), so a node that is killed
// loses at most the line being written. The daemon (--records) and `hearsay sim --records` use
// it.
// Thread-safety: none; the node's core thread calls it.
#pragma once

#include <cstdio>
#include <memory>
#include <string>

#include "hearsay/common/status.h"
#include "hearsay/node/decision_record.h"

namespace hearsay::net {

class RecordsFile final : public node::DecisionRecorder {
 public:
  // Creates (or truncates) `path`. INTERNAL naming the path and the OS's reason if it cannot.
  static Result<std::unique_ptr<RecordsFile>> Open(const std::string& path);
  ~RecordsFile() override;
  RecordsFile(const RecordsFile&) = delete;
  RecordsFile& operator=(const RecordsFile&) = delete;

  void OnRoute(const node::RouteRecord& record) override;
  void OnServe(const node::ServeRecord& record) override;

  // Lines written, and whether any write failed (a full disk: records are then incomplete).
  uint64_t lines() const { return lines_; }
  bool write_failed() const { return write_failed_; }

 private:
  explicit RecordsFile(std::FILE* file) : file_(file) {}
  void WriteLine(const std::string& line);

  std::FILE* file_;
  uint64_t lines_ = 0;
  bool write_failed_ = false;
};

}  // namespace hearsay::net
