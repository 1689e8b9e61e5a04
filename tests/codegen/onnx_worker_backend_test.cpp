// The backends of the ONNX worker (openvino, tvm, iree) before any worker starts: what they refuse
// as bad input; and the line an unsupported graph makes. Their runs and failure kinds are in
// python/tests/test_onnx_backends.py, where the packages are.
#include <gtest/gtest.h>

#include "backend_test_util.h"
#include "reprokit/codegen/backend.h"
#include "reprokit/codegen/unsupported.h"
#include "reprokit/support/errors.h"

using namespace reprokit;
using namespace reprokit::testing;

namespace {

const char* kRelu = R"(graph g(%x: f32[4, 8]) {
  %y = relu(%x)
  return (%y)
}
)";

std::string refusal(const std::string& backend, CompileOptions o, const char* graph = kRelu) {
  o.backend = backend;
  try {
    compile_graph(parse_module(graph).entry(), o);
  } catch (const Unsupported& e) { return std::string("unsupported: ") + e.what(); } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(OnnxWorkerBackend, FaultsArePlantedOnlyInReprokitsOwnCodeGenerators) {
  for (const char* backend : {"openvino", "tvm", "iree"}) {
    CompileOptions o;
    o.injections.push_back(FaultInjection{Op::relu, FaultKind::accuracy});
    EXPECT_NE(refusal(backend, o).find("plant faults in reprokit's own code generators (cpp, cuda)"), std::string::npos) << backend;
  }
}

TEST(OnnxWorkerBackend, BackendOptionsAreRefused) {
  CompileOptions o;
  o.backend_options["cpp.simdlen"] = "8";
  EXPECT_EQ(refusal("openvino", o), "--backend-option sets a compiler's own options; the openvino backend takes none");
  EXPECT_EQ(refusal("iree", o), "--backend-option sets a compiler's own options; the iree backend takes none");
  // TVM takes PassContext's switches, and only those.
  EXPECT_EQ(refusal("tvm", o), "the tvm backend takes the backend options opt_level and disabled_pass, not 'cpp.simdlen'");
  o.backend_options = {{"opt_level", "4"}};
  EXPECT_EQ(refusal("tvm", o), "backend option opt_level: '4' is not one of 0, 1, 2, 3");
}

TEST(Unsupported, TheCommandLinePrintsALineAFuzzCampaignRecognises) {
  const std::string line = unsupported_line("run", "TVM cannot take graph g: OpNotImplemented: Det");
  EXPECT_EQ(line, "reprokit run: unsupported: TVM cannot take graph g: OpNotImplemented: Det");
  EXPECT_TRUE(is_unsupported_line(line));
  EXPECT_FALSE(is_unsupported_line("reprokit run: error: unsupported: a graph says so in its name"));
  EXPECT_FALSE(is_unsupported_line("reprokit: unsupported: no command"));
  EXPECT_FALSE(is_unsupported_line("unsupported: not reprokit's line"));
}
