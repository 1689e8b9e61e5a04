// How a child ended, read from its ProcessResult in one place: a timeout (it was stopped), a
// signal (it crashed or was killed), or an exit status. Callers judge from this what the end
// means for them (a hang, a crash, a refusal, an answer).
#pragma once
#include "reprokit/process/subprocess.h"

namespace reprokit {

struct ChildEnd {
  enum class How { exited, signalled, timed_out };
  How how = How::exited;
  int exit_code = -1;  // when it exited
  int signal = 0;      // when a signal ended it
  bool exited_with(int code) const { return how == How::exited && exit_code == code; }
  // Exit status 2: a reprokit child refused its input or command line (the CLI's status for it).
  bool refused() const { return exited_with(2); }
};

// A stop for the timeout counts as the timeout even though a signal ended the child.
ChildEnd child_end(const ProcessResult& r);

}  // namespace reprokit
