// The dashboard's static files (scheduler/http/web/ and the shared
// stylesheet common/http/web/dancemoe.css), compiled into the scheduler by
// cmake/DmoeEmbed.cmake; served at "/" and "/<file name>".
#pragma once

#include <span>

#include "common/http/static_assets.h"

namespace dancemoe::scheduler {

std::span<const http::StaticAsset> dashboard_assets();

}  // namespace dancemoe::scheduler
