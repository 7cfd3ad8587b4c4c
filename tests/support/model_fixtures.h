// Helpers for tests that need a model: generate a tiny synthetic checkpoint
// into a temporary directory and open it; compare logits.
#pragma once

#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/assembly/model_runtime.h"
#include "common/model/gguf/gguf_recipe.h"
#include "common/model/synthetic/synthetic_model.h"

namespace dancemoe::testing {

// The tiny preset (Qwen3-MoE layout) with `seed`, without a tokenizer.
SyntheticModelSpec tiny_spec(uint64_t seed);

// Writes the synthetic model described by `spec` into `dir` (REQUIREs success).
void write_model(const SyntheticModelSpec& spec, const std::filesystem::path& dir);

// Writes the synthetic model into `dir` / "hf", quantizes it to a GGUF file
// of this mixture at `dir` / name and returns that path (REQUIREs success).
std::filesystem::path write_gguf_model(const SyntheticModelSpec& spec,
                                       const std::filesystem::path& dir, const std::string& name,
                                       gguf::Mixture mixture);

// Opens a model for tests, REQUIRE-ing success.
std::unique_ptr<ModelRuntime> open_model(const std::filesystem::path& dir,
                                         ComputePrecision precision = ComputePrecision::kF32,
                                         int n_threads = 2);

// The logits of every position of `ids` from a fresh KV cache
// ([ids.size(), vocab]; REQUIREs success).
std::vector<float> all_logits(ModelRuntime& model, const std::vector<int32_t>& ids);

float max_abs_diff(std::span<const float> a, std::span<const float> b);

// An expert's three matrices in the rows layout, as transfers carry them
// (kernels::copy_as_rows of each, whatever layout it is held in).
std::vector<uint8_t> expert_rows_bytes(const ExpertWeights& w);

}  // namespace dancemoe::testing
