// The command line shared by the llama.cpp test binaries (arguments from CMake):
// <setup-llama.sh> <make_llama2c_model> <hearsay binary>. Include once, in the test's .cc.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace hearsay {

std::string g_setup_script;
std::string g_model_tool;
std::string g_hearsay;

}  // namespace hearsay

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s <setup-llama.sh> <make_llama2c_model> <hearsay>\n", argv[0]);
    return 2;
  }
  hearsay::g_setup_script = argv[1];
  hearsay::g_model_tool = argv[2];
  hearsay::g_hearsay = argv[3];
  return RUN_ALL_TESTS();
}
