// HttpListener, static assets and the bearer-token helpers on a real
// socket on 127.0.0.1.
#include "common/http/http_listener.h"

#include <doctest/doctest.h>
#include <httplib.h>

#include "common/http/bearer_token.h"
#include "common/http/http_reply.h"
#include "common/http/static_assets.h"

namespace dancemoe::http {
namespace {

constexpr StaticAsset kPage[] = {
    {"/index.html", "text/html; charset=utf-8", "<h1>page</h1>"},
    {"/app.js", "text/javascript; charset=utf-8", "let x = 1;"},
};

}  // namespace

TEST_CASE("http listener: binds port 0, serves assets with a same-origin policy, stops") {
  HttpListenerOptions options;
  options.address = "127.0.0.1:0";
  options.max_body_bytes = 64;
  auto listener = HttpListener::bind(options);
  REQUIRE(listener.is_ok());
  HttpListener& l = **listener;
  CHECK(l.loopback());
  CHECK(l.address().port > 0);
  CHECK(l.bound_address() == "127.0.0.1:" + std::to_string(l.address().port));
  serve_static_assets(l.server(), kPage);
  l.server().Post("/echo", [](const httplib::Request& req, httplib::Response& res) {
    send_json(res, 200, {{"body", req.body}, {"token", bearer_token(req)}});
  });
  l.server().Get("/fail", [](const httplib::Request&, httplib::Response& res) {
    send_status_error(res, unavailable("not now"));
  });
  l.start();

  httplib::Client client("127.0.0.1", l.address().port);
  auto root = client.Get("/");
  REQUIRE(root);
  CHECK(root->status == 200);
  CHECK(root->body == "<h1>page</h1>");
  CHECK(root->get_header_value("Content-Type") == "text/html; charset=utf-8");
  CHECK(root->get_header_value("Content-Security-Policy") == std::string(kPageSecurityPolicy));
  auto js = client.Get("/app.js");
  REQUIRE(js);
  CHECK(js->body == "let x = 1;");
  auto escaped = client.Get("/appxjs");  // routes are regular expressions: '.' is escaped
  REQUIRE(escaped);
  CHECK(escaped->status == 404);

  auto echo = client.Post("/echo", {{"Authorization", "bEaReR s3cret"}}, "hi", "text/plain");
  REQUIRE(echo);
  CHECK(nlohmann::json::parse(echo->body)["token"] == "s3cret");
  auto big = client.Post("/echo", std::string(65, 'x'), "text/plain");
  REQUIRE(big);
  CHECK(big->status == 413);  // the body bound
  auto fail = client.Get("/fail");
  REQUIRE(fail);
  CHECK(fail->status == 503);
  CHECK(nlohmann::json::parse(fail->body)["error"]["code"] == "unavailable");

  l.stop();
  CHECK_FALSE(client.Get("/"));
}

TEST_CASE("http listener: a busy port or a bad address is an error naming the flag") {
  HttpListenerOptions options;
  options.address = "127.0.0.1:0";
  auto first = HttpListener::bind(options);
  REQUIRE(first.is_ok());
  options.address = (*first)->bound_address();
  options.flag = "--dashboard";
  auto second = HttpListener::bind(options);
  REQUIRE_FALSE(second.is_ok());
  CHECK(second.status().message().find("--dashboard: cannot bind") == 0);
  options.address = "nonsense";
  CHECK(HttpListener::bind(options).status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("bearer token: other schemes give no token, comparison needs equal strings") {
  httplib::Request req;
  req.headers.emplace("Authorization", "Basic abc");
  CHECK(bearer_token(req).empty());
  CHECK(constant_time_equal("abc", "abc"));
  CHECK_FALSE(constant_time_equal("abc", "abd"));
  CHECK_FALSE(constant_time_equal("abc", "abcd"));
  CHECK_FALSE(constant_time_equal("", "a"));
}

}  // namespace dancemoe::http
