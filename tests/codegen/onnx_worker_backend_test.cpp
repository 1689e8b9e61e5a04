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

TEST(OnnxWorkerBackend, BackendOptionsOutsideTheCompilersSwitchesAreRefused) {
  CompileOptions o;
  o.backend_options["cpp.simdlen"] = "8";
  // OpenVINO takes compile_model's properties that switch optimisations, and only those.
  EXPECT_EQ(refusal("openvino", o),
            "the openvino backend takes the backend options EXECUTION_MODE_HINT, INFERENCE_PRECISION_HINT, SNIPPETS_MODE and disabled_properties, "
            "not 'cpp.simdlen'");
  // IREE takes iree-compile's level and the flags of its table turned off, and only those.
  EXPECT_EQ(refusal("iree", o), "the iree backend takes the backend options opt_level and disabled_flags, not 'cpp.simdlen'");
  // TVM takes PassContext's switches, and only those.
  EXPECT_EQ(refusal("tvm", o), "the tvm backend takes the backend options opt_level and disabled_pass, not 'cpp.simdlen'");
  o.backend_options = {{"opt_level", "4"}};
  EXPECT_EQ(refusal("tvm", o), "backend option opt_level: '4' is not one of 0, 1, 2, 3");
  EXPECT_EQ(refusal("iree", o), "backend option opt_level: expected a string, got 4");
  o.backend_options = {{"opt_level", "\"O4\""}};
  EXPECT_EQ(refusal("iree", o), "backend option opt_level: 'O4' is not one of O0, O1, O2, O3");
  // A flag outside the table never reaches iree-compile's command line.
  o.backend_options = {{"disabled_flags", "\"iree-opt-const-eval,iree-hal-dump-executable-files-to=x\""}};
  EXPECT_NE(refusal("iree", o).find("backend option disabled_flags: 'iree-hal-dump-executable-files-to=x' is not one of IREE's optimisation flags ("),
            std::string::npos);
  o.backend_options = {{"INFERENCE_PRECISION_HINT", "\"f64\""}};
  EXPECT_EQ(refusal("openvino", o), "backend option INFERENCE_PRECISION_HINT: 'f64' is not one of f32, bf16, f16");
  o.backend_options = {{"disabled_properties", "\"SNIPPETS_MODE,PERF_COUNT\""}};
  EXPECT_EQ(refusal("openvino", o), "backend option disabled_properties: 'PERF_COUNT' is not INFERENCE_PRECISION_HINT or SNIPPETS_MODE");
  // Valid switches are taken.
  o.backend_options = {{"opt_level", "\"O3\""}, {"disabled_flags", "\"iree-opt-generalize-matmul\""}};
  EXPECT_EQ(refusal("iree", o), "");
  o.backend_options = {
      {"EXECUTION_MODE_HINT", "\"ACCURACY\""}, {"SNIPPETS_MODE", "\"IGNORE_CALLBACK\""}, {"disabled_properties", "\"SNIPPETS_MODE\""}};
  EXPECT_EQ(refusal("openvino", o), "");
}

TEST(Unsupported, TheCommandLinePrintsALineAFuzzCampaignRecognises) {
  const std::string line = unsupported_line("run", "TVM cannot take graph g: OpNotImplemented: Det");
  EXPECT_EQ(line, "reprokit run: unsupported: TVM cannot take graph g: OpNotImplemented: Det");
  EXPECT_TRUE(is_unsupported_line(line));
  EXPECT_FALSE(is_unsupported_line("reprokit run: error: unsupported: a graph says so in its name"));
  EXPECT_FALSE(is_unsupported_line("reprokit: unsupported: no command"));
  EXPECT_FALSE(is_unsupported_line("unsupported: not reprokit's line"));
}
