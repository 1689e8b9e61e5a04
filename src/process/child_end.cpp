// child_end (see child_end.h).
#include "reprokit/process/child_end.h"

namespace reprokit {

ChildEnd child_end(const ProcessResult& r) {
  if (r.timed_out) return {ChildEnd::How::timed_out, -1, 0};
  if (r.signal) return {ChildEnd::How::signalled, -1, r.signal};
  return {ChildEnd::How::exited, r.exit_code, 0};
}

}  // namespace reprokit
