// The importer's handler for GridSample (2-D): one grid_sample node, whose align_corners ONNX
// spells as an int.
#include <fmt/format.h>

#include <string>

#include "handler_util.h"
#include "import_context.h"

namespace reprokit::onnx_detail {

namespace {

// GridSample (opset 16, 2-D): mode bilinear or nearest (bicubic refused), padding_mode zeros,
// border or reflection, align_corners 0 or 1. AffineGrid is opset 20, past what the importer reads.
void grid_sample(NodeCtx& c) {
  c.allow({"mode", "padding_mode", "align_corners"});
  const std::string mode = c.attr_string("mode", "bilinear");
  if (mode == "bicubic") c.unsupported("mode 'bicubic' (reprokit samples bilinear and nearest)");
  if (mode != "bilinear" && mode != "nearest") c.bad(fmt::format("mode '{}'", mode));
  if (c.rank(0) != 4) c.bad(fmt::format("X must be 4-D [N, C, H, W], got {}", shape_str(c.shape(0))));
  require_float(c, 0);
  require_float(c, 1);
  const std::string padding = c.attr_string("padding_mode", "zeros");
  if (padding != "zeros" && padding != "border" && padding != "reflection") c.bad(fmt::format("padding_mode '{}'", padding));
  const int64_t align = c.attr_int("align_corners", 0);
  if (align != 0 && align != 1) c.bad(fmt::format("align_corners {} (0 or 1)", align));
  // ONNX lets the grid's float type differ from X's; reprokit samples in X's.
  const int grid = c.cast(c.value(1), c.dtype(0));
  c.set(0, c.emit(Op::grid_sample, {v(c.value(0)), v(grid)},
                  {{"mode", AttrValue(mode)}, {"padding_mode", AttrValue(padding)}, {"align_corners", AttrValue(align == 1)}}));
}

}  // namespace

const std::map<std::string, Handler, std::less<>>& sample_handlers() {
  static const std::map<std::string, Handler, std::less<>> table{
      {"GridSample", grid_sample},
  };
  return table;
}

}  // namespace reprokit::onnx_detail
