// quantize_to_gguf: writes a model directory's weights (safetensors, any of
// bf16 / f16 / f32) as one GGUF file in a quantization mixture
// (gguf_recipe.h), with llama.cpp's metadata, tensor names and layouts --
// the experts of a layer merged into one 3-D tensor per projection, the q/k
// rows of "llama" models interleaved -- and the tokenizer
// (gguf_tokenizer.h) when the directory has one, so llama.cpp-compatible
// readers accept the file.
//
// Tensors are read, converted and written one at a time (an expert tensor:
// one layer's experts), so memory stays at about one layer's experts in
// f32 whatever the model's size. Rows are quantized on `n_threads` threads.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>

#include "common/base/status.h"
#include "common/model/checkpoint.h"
#include "common/model/gguf/gguf_recipe.h"
#include "kernels/quant_format.h"

namespace dancemoe::gguf {

struct QuantizeOptions {
  Mixture mixture = Mixture::kQ8_0;
  int n_threads = 1;
  // Called after each tensor: (source bytes done, source bytes total).
  std::function<void(uint64_t done, uint64_t total)> progress;
};

struct QuantizeSummary {
  uint64_t file_bytes = 0;
  uint64_t source_bytes = 0;  // the checkpoint's weight bytes
  int64_t n_tensors = 0;
  // Tensors per format, indexed by kernels::WeightType.
  int64_t n_by_type[kernels::kWeightTypeCount] = {};
};

Result<QuantizeSummary> quantize_to_gguf(const Checkpoint& checkpoint,
                                         const std::filesystem::path& out,
                                         const QuantizeOptions& options);

}  // namespace dancemoe::gguf
