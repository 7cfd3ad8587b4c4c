#include "edge_node/agent/node_options.h"

#include <doctest/doctest.h>

#include <CLI/CLI.hpp>

namespace dancemoe::node {
namespace {

Result<NodeOptions> parse(std::vector<std::string> args) {
  CLI::App app;
  NodeOptions options;
  auto raw = add_node_flags(app, &options);
  args.insert(args.begin(), "dancemoe-node");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    return invalid_argument(e.what());
  }
  DMOE_RETURN_IF_ERROR(finish_node_flags(*raw, &options));
  return options;
}

}  // namespace

TEST_CASE("node flags: durations with units") {
  CHECK(parse_duration("10s", "--x")->count() == 10000);
  CHECK(parse_duration("250ms", "--x")->count() == 250);
  CHECK(parse_duration("2m", "--x")->count() == 120000);
  CHECK(parse_duration("300", "--x")->count() == 300);
  CHECK_FALSE(parse_duration("0s", "--x").is_ok());
  CHECK_FALSE(parse_duration("5 parsecs", "--x").is_ok());
}

TEST_CASE("node flags: a standalone node with every option converted") {
  Result<NodeOptions> o = parse({"--model",
                                 "m",
                                 "--node-id",
                                 "a",
                                 "--placement",
                                 "p.json",
                                 "--experts",
                                 "tcp://127.0.0.1:0",
                                 "--wire-dtype",
                                 "f32",
                                 "--precision",
                                 "f32",
                                 "--call-timeout-ms",
                                 "250",
                                 "--report-interval",
                                 "2s",
                                 "--offload-cache",
                                 "0",
                                 "--expert-source",
                                 "peer",
                                 "--no-overlap",
                                 "--migration-rate",
                                 "100M",
                                 "--kv-type",
                                 "bf16",
                                 "--rows-layout",
                                 "--insecure"});
  REQUIRE(o.is_ok());
  CHECK(o->wire_dtype == DType::kF32);
  CHECK(o->precision == ComputePrecision::kF32);
  CHECK(o->call_timeout.count() == 250);
  CHECK(o->report_interval.count() == 2000);
  CHECK(o->report_interval_set);
  CHECK(o->offload_cache_bytes == 0);
  CHECK(o->expert_source == ExpertSource::kPeer);
  CHECK_FALSE(o->overlap);
  CHECK(o->throttle.max_bytes_per_s == 100.0 * (1 << 20));
  CHECK(o->kv_element == KvElement::kBF16);
  CHECK_FALSE(o->interleave_weights);
  Result<NodeOptions> defaults =
      parse({"--model", "m", "--node-id", "a", "--scheduler", "tcp://s:5550", "--insecure"});
  REQUIRE(defaults.is_ok());
  CHECK_FALSE(defaults->report_interval_set);
  CHECK(defaults->wire_dtype == DType::kBF16);
  CHECK(defaults->overlap);
  CHECK(defaults->kv_element == KvElement::kF32);
  CHECK(defaults->interleave_weights);
}

TEST_CASE("node flags: exactly one of --scheduler and --placement -- bad values named") {
  CHECK(parse({"--model", "m", "--node-id", "a"}).status().message().find("exactly one of") !=
        std::string::npos);
  CHECK(parse({"--model", "m", "--node-id", "a", "--placement", "p", "--scheduler", "tcp://s:1"})
            .status()
            .message()
            .find("exactly one of") != std::string::npos);
  CHECK(parse({"--model", "m", "--node-id", "a,b", "--placement", "p"})
            .status()
            .message()
            .find("--node-id") != std::string::npos);
  CHECK(parse({"--model", "m", "--node-id", "a", "--placement", "p", "--wire-dtype", "f16"})
            .status()
            .message() == "--wire-dtype: expected bf16 or f32, got 'f16'");
  CHECK(parse({"--model", "m", "--node-id", "a", "--placement", "p", "--kv-type", "q8"})
            .status()
            .message() == "--kv-type: expected f32 or bf16, got 'q8'");
  CHECK(parse({"--model", "m", "--node-id", "a", "--placement", "p", "--expert-source", "tape"})
            .status()
            .message()
            .find("--expert-source") != std::string::npos);
}

TEST_CASE("node flags: keys are required unless --insecure, and not both") {
  const std::string attached =
      parse({"--model", "m", "--node-id", "a", "--scheduler", "tcp://s:1"}).status().message();
  CHECK(attached.find("needs keys: --secret-key FILE and --scheduler-key") != std::string::npos);
  CHECK(attached.find("--insecure") != std::string::npos);
  CHECK(parse({"--model", "m", "--node-id", "a", "--placement", "p", "--secret-key", "a.key"})
            .status()
            .message()
            .find("--peer-keys DIR") != std::string::npos);
  CHECK(parse({"--model", "m", "--node-id", "a", "--placement", "p", "--insecure", "--secret-key",
               "a.key"})
            .status()
            .message()
            .find("choose keys or --insecure") != std::string::npos);
  Result<NodeOptions> secure = parse({"--model", "m", "--node-id", "a", "--scheduler", "tcp://s:1",
                                      "--secret-key", "a.key", "--scheduler-key", "s.pub"});
  REQUIRE(secure.is_ok());
  CHECK_FALSE(secure->insecure);
}

TEST_CASE("node flags: the expert port binds the advertised address, not every interface") {
  // Before: tcp://*:5551 -- every interface -- by default.
  Result<NodeOptions> plain =
      parse({"--model", "m", "--node-id", "a", "--placement", "p", "--insecure"});
  REQUIRE(plain.is_ok());
  CHECK(plain->experts_bind == "tcp://127.0.0.1:5551");
  Result<NodeOptions> advertised = parse({"--model", "m", "--node-id", "a", "--placement", "p",
                                          "--insecure", "--advertise", "tcp://localhost:6001"});
  REQUIRE(advertised.is_ok());
  CHECK(advertised->experts_bind == "tcp://127.0.0.1:6001");
  Result<NodeOptions> explicit_bind =
      parse({"--model", "m", "--node-id", "a", "--placement", "p", "--insecure", "--experts",
             "tcp://*:7000", "--advertise", "tcp://ws1.lab:7000"});
  REQUIRE(explicit_bind.is_ok());
  CHECK(explicit_bind->experts_bind == "tcp://*:7000");
  CHECK(default_experts_bind("tcp://no-such-host.invalid:1")
            .status()
            .message()
            .find("cannot resolve") != std::string::npos);
  CHECK_FALSE(default_experts_bind("ws1:5551").is_ok());
}

TEST_CASE("node flags: batching flags take their ranges and sizes, bad values named") {
  const std::vector<std::string> base = {"--model",     "m", "--node-id", "a",
                                         "--placement", "p", "--insecure"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return parse(args);
  };
  const Result<NodeOptions> good = with({"--max-batch", "8", "--kv-memory", "1G", "--prefill-chunk",
                                         "64", "--prefix-cache", "0", "--stream-interval", "4"});
  REQUIRE(good.is_ok());
  CHECK(good->max_batch == 8);
  CHECK(good->kv_memory_bytes == (uint64_t{1} << 30));
  CHECK(good->prefill_chunk == 64);
  CHECK(good->prefix_cache_bytes == 0);
  CHECK(good->stream_interval == 4);
  CHECK(with({})->stream_interval == 1);
  const std::vector<std::pair<std::vector<std::string>, std::string>> bad = {
      {{"--max-batch", "0"}, "--max-batch"},
      {{"--max-batch", "300"}, "--max-batch"},
      {{"--kv-memory", "0"}, "--kv-memory"},
      {{"--kv-memory", "lots"}, "--kv-memory"},
      {{"--prefill-chunk", "0"}, "--prefill-chunk"},
      {{"--prefix-cache", "-5M"}, "--prefix-cache"},
      {{"--stream-interval", "0"}, "--stream-interval"},
      {{"--stream-interval", "65"}, "--stream-interval"},
  };
  for (const auto& [extra, flag] : bad) {
    CAPTURE(flag);
    const Result<NodeOptions> r = with(extra);
    REQUIRE_FALSE(r.is_ok());
    CHECK(r.status().message().find(flag) != std::string::npos);
  }
}

}  // namespace dancemoe::node
