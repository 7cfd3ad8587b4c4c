// Web pages compiled into the binary: the dashboard the scheduler serves and
// the chat page every node serves are small static files in the repository
// (no build step, no CDN), which cmake/DmoeEmbed.cmake turns into a table
// of StaticAsset at build time. Serving them from the binary means nothing
// to install or find at run time, and a page always matches the API of the
// binary that serves it.
//
// Every asset is answered with its content type, `Cache-Control: no-cache`
// and a Content-Security-Policy that lets the page load and fetch only from
// its own origin (no CDN can be used by accident, no inline script runs).
// Thread-safe: the table is immutable.
#pragma once

#include <span>
#include <string_view>

namespace httplib {
class Server;
}

namespace dancemoe::http {

struct StaticAsset {
  std::string_view path;  // URL path: "/index.html", "/chat.js"
  std::string_view content_type;
  std::string_view body;
};

inline constexpr std::string_view kPageSecurityPolicy =
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

// GET for every asset at its path, and "/" for "/index.html" when present.
void serve_static_assets(httplib::Server& server, std::span<const StaticAsset> assets);

// The asset at `path`, or nullptr.
const StaticAsset* find_asset(std::span<const StaticAsset> assets, std::string_view path);

}  // namespace dancemoe::http
