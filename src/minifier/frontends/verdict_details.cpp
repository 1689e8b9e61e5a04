// A front end's details of a verdict (see verdict_details.h).
#include "reprokit/minifier/verdict_details.h"

namespace reprokit {

const VerdictDetails& details(const Verdict& v) {
  static const VerdictDetails none;
  const auto* d = std::any_cast<VerdictDetails>(&v.details);
  return d ? *d : none;
}

VerdictDetails& details(Verdict& v) {
  if (!v.details.has_value()) v.details = VerdictDetails{};
  return std::any_cast<VerdictDetails&>(v.details);
}

const Failure& failure_of(const Verdict& v) { return details(v).got; }

void set_failure(Verdict& v, Failure got) {
  v.failed = got.failed();
  details(v).got = std::move(got);
}

Verdict verdict_of(bool interesting, Failure got) {
  Verdict v;
  v.interesting = interesting;
  set_failure(v, std::move(got));
  return v;
}

}  // namespace reprokit
