#include "hearsay/prefix/flat_array.h"

#include <cstdlib>

#include "hearsay/common/check.h"

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace hearsay::prefix::flat_array_internal {
namespace {
constexpr size_t kHugePage = size_t{2} << 20;
}  // namespace

void* AllocateZeroed(size_t bytes) {
  if (bytes == 0) return nullptr;
  const bool huge = bytes >= kHugePage;
  const size_t align = huge ? kHugePage : 64;
  const size_t rounded = (bytes + align - 1) / align * align;
  void* p = std::aligned_alloc(align, rounded);
  HEARSAY_CHECK_MSG(p != nullptr, "out of memory");
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  // Advise before the first touch so the zero fill below faults in huge pages.
  if (huge) (void)madvise(p, rounded, MADV_HUGEPAGE);
#endif
  std::memset(p, 0, rounded);
  return p;
}

void Free(void* p) { std::free(p); }

}  // namespace hearsay::prefix::flat_array_internal
