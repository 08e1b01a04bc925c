// Self-test input of scripts/check-repo-paths.sh.
#pragma once
inline constexpr const char* kTrace = "/home/someone/trace.jsonl";
