#include "hearsay/net/records_file.h"

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

namespace hearsay::net {

Result<std::unique_ptr<RecordsFile>> RecordsFile::Open(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    return InternalError("cannot write decision records to " + path + ": " +
                         std::strerror(errno));
  }
  std::setvbuf(f, nullptr, _IOLBF, 1 << 16);
  return std::unique_ptr<RecordsFile>(new RecordsFile(f));
}

RecordsFile::~RecordsFile() { std::fclose(file_); }

void RecordsFile::OnRoute(const node::RouteRecord& record) {
  WriteLine(node::ToJson(record).dump());
}

void RecordsFile::OnServe(const node::ServeRecord& record) {
  WriteLine(node::ToJson(record).dump());
}

void RecordsFile::WriteLine(const std::string& line) {
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() ||
      std::fputc('\n', file_) == EOF) {
    write_failed_ = true;
    return;
  }
  ++lines_;
}

}  // namespace hearsay::net
