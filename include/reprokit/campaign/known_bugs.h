// Known bugs: a list of triage signatures a team has already filed (each with where: an upstream
// issue, a ticket), so that `triage --known FILE` says which of a campaign's groups are new.
// The file is JSON: an array of {"signature": "...", "reference": "..."} (other fields are
// ignored, so `triage --json` output, with references added, is such a file).
#pragma once
#include <map>
#include <string>

namespace reprokit {

// Signature -> reference ("" when the entry gives none). UserError naming the file (and the entry)
// for a file that is not such a list.
std::map<std::string, std::string> read_known_bugs(const std::string& path);

}  // namespace reprokit
