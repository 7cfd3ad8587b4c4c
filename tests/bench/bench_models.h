// The benchmarks' synthetic models: written once into a directory (most keep
// theirs under the build tree, bench-models/PRESET) and reused by later runs,
// as generating the medium preset takes a while.
#pragma once

#include <cstdio>
#include <filesystem>
#include <string>

#include "common/base/status.h"
#include "common/model/synthetic/synthetic_model.h"

namespace dancemoe::bench {

// Writes `spec`'s model into `dir` unless a model (its config.json) is there.
inline Status ensure_synthetic_model(const SyntheticModelSpec& spec,
                                     const std::filesystem::path& dir) {
  if (std::filesystem::exists(dir / "config.json")) return Status::ok();
  const std::string what = "the " + spec.preset + " preset" +
                           (spec.config_overrides.empty() ? "" : " with the benchmark's overrides");
  std::printf("generating %s in %s ...\n", what.c_str(), dir.c_str());
  return write_synthetic_model(spec, dir);
}

// The common case, a preset as it is; false after printing why it failed.
inline bool ensure_preset(const std::string& preset, const std::filesystem::path& dir) {
  SyntheticModelSpec spec;
  spec.preset = preset;
  if (Status s = ensure_synthetic_model(spec, dir); !s.is_ok()) {
    std::fprintf(stderr, "%s\n", s.to_string().c_str());
    return false;
  }
  return true;
}

}  // namespace dancemoe::bench
