// The `dancemoe model ...` group: several files add sub-commands to it
// (manifest, split, headers), whichever registers first creates it.
#pragma once

#include <CLI/CLI.hpp>

namespace dancemoe::cli {

CLI::App* model_group(CLI::App& root);

}  // namespace dancemoe::cli
