// Reading a list of known bugs (see known_bugs.h). The file is the user's: any JSON may be in it.
#include "reprokit/campaign/known_bugs.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "reprokit/support/errors.h"
#include "reprokit/support/escape_controls.h"
#include "reprokit/support/files.h"

namespace reprokit {

std::map<std::string, std::string> read_known_bugs(const std::string& path) {
  const std::string where = escape_controls(path);
  nlohmann::json list = nlohmann::json::parse(read_file(path, kMaxTextFileBytes), nullptr, false);
  if (list.is_discarded()) throw UserError(fmt::format("{}: not JSON (--known takes a JSON array of {{\"signature\", \"reference\"}})", where));
  if (!list.is_array()) throw UserError(fmt::format("{}: not a JSON array of {{\"signature\", \"reference\"}}", where));
  std::map<std::string, std::string> known;
  for (size_t i = 0; i < list.size(); ++i) {
    const nlohmann::json& e = list[i];
    if (!e.is_object() || !e.contains("signature") || !e["signature"].is_string())
      throw UserError(fmt::format("{}: entry {} has no \"signature\" string", where, i));
    if (e.contains("reference") && !e["reference"].is_string())
      throw UserError(fmt::format("{}: entry {}'s \"reference\" is not a string", where, i));
    known[e["signature"].get<std::string>()] = e.value("reference", "");
  }
  return known;
}

}  // namespace reprokit
