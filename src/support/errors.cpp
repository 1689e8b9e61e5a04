// Error types' constructors.
#include "reprokit/support/errors.h"

#include <fmt/format.h>

namespace reprokit {

ParseError::ParseError(const std::string& f, int l, int c, const std::string& msg)
    : UserError(fmt::format("{}:{}:{}: error: {}", f, l, c, msg)), file(f), line(l), col(c) {}

}  // namespace reprokit
