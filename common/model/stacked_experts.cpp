#include "common/model/stacked_experts.h"

#include "common/base/shape_text.h"
#include "common/model/published_mxfp4.h"
#include "kernels/quant_format.h"

namespace dancemoe {
namespace {

class Builder {
 public:
  Builder(const ModelConfig& config, const std::vector<std::filesystem::path>& files,
          std::unordered_map<std::string, TensorLocation>* tensors)
      : c_(config), files_(files), tensors_(*tensors) {}

  Status add_layer(int64_t layer) {
    const StackedExpertNames& n = *c_.stacked_experts;
    const int64_t e = c_.n_experts, inter = c_.moe_intermediate_size, hidden = c_.hidden_size;
    const int64_t pb = kPublishedMxfp4BlockBytes;
    DMOE_ASSIGN_OR_RETURN(const TensorLocation* gu_blocks,
                          stored(n.gate_up_blocks, layer, {e, 2 * inter, hidden / 32, pb}, true));
    DMOE_ASSIGN_OR_RETURN(const TensorLocation* gu_scales,
                          stored(n.gate_up_scales, layer, {e, 2 * inter, hidden / 32}, true));
    DMOE_ASSIGN_OR_RETURN(const TensorLocation* gu_bias,
                          stored(n.gate_up_bias, layer, {e, 2 * inter}, false));
    DMOE_ASSIGN_OR_RETURN(const TensorLocation* d_blocks,
                          stored(n.down_blocks, layer, {e, hidden, inter / 32, pb}, true));
    DMOE_ASSIGN_OR_RETURN(const TensorLocation* d_scales,
                          stored(n.down_scales, layer, {e, hidden, inter / 32}, true));
    DMOE_ASSIGN_OR_RETURN(const TensorLocation* d_bias,
                          stored(n.down_bias, layer, {e, hidden}, false));
    for (TensorLocation const* scales : {gu_scales, d_scales}) {
      const TensorLocation* blocks = scales == gu_scales ? gu_blocks : d_blocks;
      if (scales->file_index != blocks->file_index) {
        return invalid_argument(files_[scales->file_index].string() + ": tensor '" + scales->name +
                                "' must be in the same file as '" + blocks->name + "'");
      }
    }
    const uint64_t bias_elem = static_cast<uint64_t>(kernels::weight_block_bytes(gu_bias->type));
    for (int64_t x = 0; x < e; ++x) {
      // gate: rows 0, 2, ... of the expert's [2 inter] rows; up: rows 1, 3, ...
      for (int half = 0; half < 2; ++half) {
        const TensorRole role = half == 0 ? TensorRole::kExpertGate : TensorRole::kExpertUp;
        add_mxfp4(role, layer, x, *gu_blocks, *gu_scales, 2 * inter, inter, hidden, half, 2);
        const TensorRole bias = half == 0 ? TensorRole::kExpertGateBias : TensorRole::kExpertUpBias;
        add_vector(bias, layer, x, *gu_bias, 2 * inter, inter, bias_elem, half, 2);
      }
      add_mxfp4(TensorRole::kExpertDown, layer, x, *d_blocks, *d_scales, hidden, hidden, inter, 0,
                1);
      add_vector(TensorRole::kExpertDownBias, layer, x, *d_bias, hidden, hidden,
                 static_cast<uint64_t>(kernels::weight_block_bytes(d_bias->type)), 0, 1);
    }
    return Status::ok();
  }

 private:
  // The stored tensor `pattern` of `layer`, checked against its shape and
  // kind (U8 for blocks and scales, a float type for biases).
  Result<const TensorLocation*> stored(const std::string& pattern, int64_t layer,
                                       const std::vector<int64_t>& shape, bool u8) const {
    const std::string name = tensor_name_from_pattern(pattern, layer);
    auto it = tensors_.find(name);
    if (it == tensors_.end()) {
      return not_found("tensor '" + name + "' required by config.json (" + c_.hf_architecture +
                       ", its experts as published) is missing from the safetensors files");
    }
    const TensorLocation& t = it->second;
    const std::string file = files_[t.file_index].string();
    if (t.raw_u8 != u8) {
      return invalid_argument(file + ": tensor '" + name + "' must be " +
                              (u8 ? "U8 (MXFP4 blocks or scales)" : "F32, F16 or BF16"));
    }
    if (t.shape != shape) {
      return invalid_argument(file + ": tensor '" + name + "' has shape " + shape_text(t.shape) +
                              ", but config.json implies " + shape_text(shape));
    }
    return &t;
  }

  TensorLocation view_of(const TensorLocation& base, TensorRole role, int64_t layer,
                         int64_t expert) const {
    TensorLocation loc;
    loc.name = c_.tensor_name(role, layer, expert);
    loc.file_index = base.file_index;
    loc.shape = c_.expected_shape(role);
    return loc;
  }

  // Rows first_row, first_row + step, ... (n_rows of them) of expert x's
  // [stored_rows, cols] MXFP4 matrix.
  void add_mxfp4(TensorRole role, int64_t layer, int64_t x, const TensorLocation& blocks,
                 const TensorLocation& scales, int64_t stored_rows, int64_t n_rows, int64_t cols,
                 int first_row, int step) {
    const uint64_t row_blocks = static_cast<uint64_t>(cols / 32);
    const uint64_t block_row = row_blocks * kPublishedMxfp4BlockBytes;
    const uint64_t expert_rows = static_cast<uint64_t>(x * stored_rows + first_row);
    TensorLocation loc = view_of(blocks, role, layer, x);
    loc.type = kernels::WeightType::kMXFP4;
    loc.file_offset = blocks.file_offset + expert_rows * block_row;
    loc.n_bytes = static_cast<uint64_t>(n_rows * kernels::weight_row_bytes(loc.type, cols));
    TensorView v;
    v.row_bytes = block_row;
    v.row_stride = static_cast<uint64_t>(step) * block_row;
    v.published_mxfp4 = true;
    v.scales_offset = scales.file_offset + expert_rows * row_blocks;
    v.scales_stride = static_cast<uint64_t>(step) * row_blocks;
    loc.view = v;
    tensors_[loc.name] = std::move(loc);
  }

  // Elements first, first + step, ... (n of them) of expert x's row of
  // `stored_n` elements of `bias`.
  void add_vector(TensorRole role, int64_t layer, int64_t x, const TensorLocation& bias,
                  int64_t stored_n, int64_t n, uint64_t elem_bytes, int first, int step) {
    TensorLocation loc = view_of(bias, role, layer, x);
    loc.type = bias.type;
    loc.file_offset = bias.file_offset + static_cast<uint64_t>(x * stored_n + first) * elem_bytes;
    loc.n_bytes = static_cast<uint64_t>(n) * elem_bytes;
    TensorView v;
    v.row_bytes = elem_bytes;
    v.row_stride = static_cast<uint64_t>(step) * elem_bytes;
    loc.view = v;
    tensors_[loc.name] = std::move(loc);
  }

  const ModelConfig& c_;
  const std::vector<std::filesystem::path>& files_;
  std::unordered_map<std::string, TensorLocation>& tensors_;
};

}  // namespace

Status add_stacked_expert_views(const ModelConfig& config,
                                const std::vector<std::filesystem::path>& files,
                                std::unordered_map<std::string, TensorLocation>* tensors) {
  Builder builder(config, files, tensors);
  for (int64_t l = 0; l < config.n_layers; ++l) {
    if (config.layer_is_moe[static_cast<size_t>(l)]) DMOE_RETURN_IF_ERROR(builder.add_layer(l));
  }
  return Status::ok();
}

}  // namespace dancemoe
