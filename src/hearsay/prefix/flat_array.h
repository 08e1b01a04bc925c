// FlatArray<T>: a fixed-size, zero-filled array of trivially copyable T for large flat tables.
//
// Big arrays (2 MiB and up) are aligned to 2 MiB and, on Linux, marked for transparent huge
// pages, which makes random access into a multi-gigabyte hash table far cheaper in TLB misses
// (the dominant cost of PeerIndex::Match on virtualized hosts). This is only a hint: if the OS
// declines, the array works the same on ordinary pages. No clock, thread or I/O is involved.
//
// Owns its memory; movable, not copyable. Thread-safety: none (plain value).
#pragma once

#include <cstddef>
#include <cstring>
#include <type_traits>
#include <utility>

namespace hearsay::prefix {

// Hints the CPU to load the cache line holding `p`. GCC 12 silently drops __builtin_prefetch
// when the address comes out of a hash mix like HolderTable's, so x86-64 uses the instruction
// directly. A hint only: it never faults, and it does not read memory as far as C++ is concerned.
inline void PrefetchLine(const void* p) {
#if defined(__x86_64__)
  asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p);
#endif
}

namespace flat_array_internal {
// `bytes` zeroed bytes, aligned to at least 64; never null for bytes > 0 (out of memory
// crashes, as it would in operator new).
void* AllocateZeroed(size_t bytes);
void Free(void* p);
}  // namespace flat_array_internal

template <typename T>
class FlatArray {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  FlatArray() = default;
  // `n` elements, all bytes zero.
  explicit FlatArray(size_t n)
      : data_(static_cast<T*>(flat_array_internal::AllocateZeroed(n * sizeof(T)))), size_(n) {}
  ~FlatArray() { flat_array_internal::Free(data_); }
  FlatArray(FlatArray&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  FlatArray& operator=(FlatArray&& o) noexcept {
    swap(o);
    return *this;
  }
  FlatArray(const FlatArray&) = delete;
  FlatArray& operator=(const FlatArray&) = delete;

  void swap(FlatArray& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
  }

  size_t size() const { return size_; }
  T* data() { return data_; }
  const T* data() const { return data_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }

 private:
  T* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace hearsay::prefix
