#include "common/http/static_assets.h"

#include <httplib.h>

#include <string>

namespace dancemoe::http {
namespace {

void answer(const StaticAsset& asset, httplib::Response& res) {
  res.status = 200;
  res.set_header("Cache-Control", "no-cache");
  res.set_header("Content-Security-Policy", std::string(kPageSecurityPolicy));
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Referrer-Policy", "no-referrer");
  res.set_content(std::string(asset.body), std::string(asset.content_type));
}

// cpp-httplib matches routes as regular expressions: escape the path.
std::string route_pattern(std::string_view path) {
  std::string out;
  for (char c : path) {
    if (std::string_view(".+*?^$()[]{}|\\").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

const StaticAsset* find_asset(std::span<const StaticAsset> assets, std::string_view path) {
  for (const StaticAsset& a : assets) {
    if (a.path == path) return &a;
  }
  return nullptr;
}

void serve_static_assets(httplib::Server& server, std::span<const StaticAsset> assets) {
  for (const StaticAsset& asset : assets) {
    const StaticAsset* a = &asset;  // the table outlives the server
    const auto handler = [a](const httplib::Request&, httplib::Response& res) { answer(*a, res); };
    server.Get(route_pattern(asset.path), handler);
    if (asset.path == "/index.html") server.Get("/", handler);
  }
}

}  // namespace dancemoe::http
