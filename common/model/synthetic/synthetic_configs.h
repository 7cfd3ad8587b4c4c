// The config.json of each architecture `dancemoe make-model` writes, in
// the family's published layout (its own field names and conventions), at
// the sizes of a preset:
//   tiny   (unit and golden tests)   hidden 64,   4 layers,  8 experts, top-2
//   small  (the demo)                hidden 256,  8 layers, 16 experts, top-4
//   medium (benchmarks)              hidden 1024, 16 layers, 32 experts, top-8
//   olmoe-shape                      OLMoE's routing shape (16 MoE layers x 64
//                                    experts, top-8) at a small width, for
//                                    replaying the shared OLMoE trace
// Each family keeps its characteristic blocks at every size (shared
// experts, leading dense layers, latent attention, routing variant, rope
// scaling as its published config has it). Pure functions; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/base/status.h"

namespace dancemoe {

// The --arch values, in order ("qwen3_moe", "mixtral", ...); synthetic_config
// also takes them with '-' for '_' ("gpt-oss").
const std::vector<std::string>& synthetic_architectures();

// config.json without the tokenizer's ids (bos / eos) and vocab size, which
// the caller sets; "vocab_size" holds the preset's. invalid_argument naming
// --arch or --preset when unknown.
Result<nlohmann::ordered_json> synthetic_config(const std::string& arch, const std::string& preset,
                                                bool tie_word_embeddings, bool norm_topk_prob);

}  // namespace dancemoe
