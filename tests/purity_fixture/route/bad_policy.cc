// A deliberate violation: the purity check must reject this file.
#include <chrono>
#include <thread>

long Bad() {
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return std::chrono::steady_clock::now().time_since_epoch().count();
}
