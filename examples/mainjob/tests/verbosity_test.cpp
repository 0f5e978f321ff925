#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "cafmesh/mainjob/scenario.hpp"
#include "cafmesh/mainjob/verbosity.hpp"

using namespace cafmesh;
using namespace cafmesh::mainjob;

TEST_CASE("mainjob verbosity: without --verbose the demo's processes log warnings and errors only") {
  CHECK(demo_log_level(log::level::info, false) == log::level::warning);
  CHECK(demo_log_level(log::level::debug, false) == log::level::warning);
  CHECK(demo_log_level(log::level::trace, false) == log::level::warning);
  // A scenario that asks for less than warnings keeps it.
  CHECK(demo_log_level(log::level::error, false) == log::level::error);
  CHECK(demo_log_level(log::level::off, false) == log::level::off);
}

TEST_CASE("mainjob verbosity: --verbose keeps the scenario's level (info unless it says otherwise)") {
  CHECK(demo_log_level(log::level::info, true) == log::level::info);
  CHECK(demo_log_level(log::level::debug, true) == log::level::debug);
  CHECK(demo_log_level(log::level::error, true) == log::level::error);
}

TEST_CASE("mainjob verbosity: the level goes into every process's configuration, cafmesh-node's included") {
  auto s = default_scenario();
  REQUIRE(s.config_json == "{}");
  apply_verbosity(s, false);
  CHECK(nlohmann::json::parse(s.config_json) == nlohmann::json::parse(R"({"log":{"level":"warning"}})"));
  auto silo = process_config(s, config::process_role::silo_host, "silo-A");
  REQUIRE(silo.ok);
  CHECK(silo.value.log.level == "warning");
  auto verbose = default_scenario();
  apply_verbosity(verbose, true);
  CHECK(nlohmann::json::parse(verbose.config_json)
        == nlohmann::json::parse(R"({"log":{"level":"info"}})"));
  // The scenario's other settings stay; its own level is the base.
  auto tuned = default_scenario();
  tuned.config_json = R"({"log":{"level":"debug"},"routing":{"saturation_warn_after_ms":5}})";
  auto quiet = tuned;
  apply_verbosity(quiet, false);
  CHECK(nlohmann::json::parse(quiet.config_json)
        == nlohmann::json::parse(
          R"({"log":{"level":"warning"},"routing":{"saturation_warn_after_ms":5}})"));
  apply_verbosity(tuned, true);
  CHECK(nlohmann::json::parse(tuned.config_json)
        == nlohmann::json::parse(
          R"({"log":{"level":"debug"},"routing":{"saturation_warn_after_ms":5}})"));
}
