// The two kinds of error reprokit raises: UserError for bad input (exit status 2 at the CLI) and
// InternalError for a broken invariant inside reprokit itself.
#pragma once
#include <stdexcept>
#include <string>

namespace reprokit {

struct UserError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A text-format error; what() reads "FILE:LINE:COL: error: MESSAGE".
struct ParseError : UserError {
  ParseError(const std::string& file, int line, int col, const std::string& msg);
  std::string file;
  int line, col;
};

// A graph that fails verification; what() names the graph and the node.
struct VerifyError : UserError {
  using UserError::UserError;
};

struct InternalError : std::logic_error {
  using std::logic_error::logic_error;
};

}  // namespace reprokit
