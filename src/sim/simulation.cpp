// The three simulations of seed 004 Paper IV §5 by name.
#include "sim/sim_detail.hpp"

#include <ksum/error.hpp>

#include <fmt/format.h>

namespace ksum::sim {

Scenario parse_scenario(std::string_view name) {
  if (name == "kh")
    return Scenario::kh;
  if (name == "galaxy")
    return Scenario::galaxy;
  if (name == "cylinder")
    return Scenario::cylinder;
  throw Error(ErrorCode::invalid_argument,
              fmt::format("simulate: unknown simulation '{}'; valid: kh, galaxy, cylinder", name));
}

std::string_view to_string(Scenario s) {
  switch (s) {
  case Scenario::kh:
    return "kh";
  case Scenario::galaxy:
    return "galaxy";
  case Scenario::cylinder:
    return "cylinder";
  }
  return "?";
}

std::unique_ptr<Simulation> make_simulation(const SimulationOptions &options) {
  switch (options.scenario) {
  case Scenario::kh:
    return std::make_unique<KhSimulation>(options);
  case Scenario::galaxy:
    return std::make_unique<GalaxySimulation>(options);
  case Scenario::cylinder:
    return std::make_unique<CylinderSimulation>(options);
  }
  throw Error(ErrorCode::invalid_argument, "simulate: unknown scenario");
}

} // namespace ksum::sim
