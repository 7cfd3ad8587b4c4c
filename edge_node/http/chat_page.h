// The chat page every node serves at "/" (issue 19): static files in
// edge_node/http/web/ (and the shared common/http/web/dancemoe.css),
// compiled into the node by cmake/DmoeEmbed.cmake. The page talks to this
// node's own API: POST /v1/chat/completions streamed with
// stream_options.include_stats, and GET /v1/stats for the model and node.
#pragma once

#include <span>

#include "common/http/static_assets.h"

namespace dancemoe::node {

std::span<const http::StaticAsset> chat_page_assets();

}  // namespace dancemoe::node
