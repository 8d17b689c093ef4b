#pragma once
// A cache file shared by processes: one JSON object whose keys are replaced one at a time under an
// advisory lock (`path`.lock) and written by renaming a neighbour over it, so that two processes
// never lose each other's entries and a crash never leaves half a file. Used by the task-size
// calibration (tasksize.json) and Method::automatic's rates (methods.json).
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

namespace ksum::detail {

// The object in `path`; false (with *why) where there is none or it is not a JSON object.
bool read_json_object(const std::filesystem::path &path, nlohmann::json &out, std::string *why);

// Sets key = value in the object in `path` (created, with its folder, where missing; a corrupt one
// is replaced). Throws Error(io) naming `what` where it cannot be written.
void write_json_key(const std::filesystem::path &path, const std::string &key,
                    const nlohmann::json &value, const char *what);

} // namespace ksum::detail
