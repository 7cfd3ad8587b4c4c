#include "common/model/expert_compute.h"

#include "common/backend/cpu/cpu_expert_engine.h"

namespace dancemoe {

ExpertComputer::ExpertComputer(ThreadPool& pool, ComputePrecision precision)
    : engine_(std::make_unique<backend::CpuExpertEngine>(pool, precision)) {}

ExpertComputer::ExpertComputer(std::unique_ptr<backend::ExpertEngine> engine)
    : engine_(std::move(engine)) {}

ExpertComputer::~ExpertComputer() = default;

}  // namespace dancemoe
