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

// Logits of one prompt ([positions, vocab]) from two runtimes that differ
// only in how a matrix is laid out or summed: the first position within
// first_tolerance x max |a|, every position on average within 1 % of it (a
// later token may route a near-tie differently; a matrix read in the wrong
// layout gives noise of the logits' size). CHECKs; MESSAGEs the figures.
void check_same_computation(std::span<const float> a, std::span<const float> b, size_t vocab,
                            float first_tolerance);

// An expert's three matrices in the rows layout, as transfers carry them
// (kernels::copy_as_rows of each, whatever layout it is held in).
std::vector<uint8_t> expert_rows_bytes(const ExpertWeights& w);

}  // namespace dancemoe::testing
