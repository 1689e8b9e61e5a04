// The backend table: every caller asks it what a backend does, so its rows must say what the
// backends really do, and an unknown name is refused with the choices.
#include <gtest/gtest.h>

#include "backend_test_util.h"
#include "reprokit/codegen/backend.h"
#include "reprokit/codegen/passes/pass_manager.h"
#include "reprokit/support/errors.h"

using namespace reprokit;
using namespace reprokit::testing;

namespace {

const char* kGraph = R"(graph g(%x: f32[4, 8] grad) {
  %a = mul(%x, %x)
  %b = relu(%a)
  %c = add(%b, 1.0)
  %s = softmax(%c, -1)
  return %s
}
)";

Graph parsed() { return parse_module(kGraph).entry(); }

}  // namespace

TEST(BackendTable, ListsTheBackendsInHelpOrder) {
  std::vector<std::string> names;
  for (const Backend& b : backend_table()) names.emplace_back(b.name);
  EXPECT_EQ(names, (std::vector<std::string>{"eager", "aot_eager", "cpp", "cuda", "onnxruntime", "inductor", "openvino", "tvm", "iree"}));
  EXPECT_EQ(backend_choices(), "eager, aot_eager, cpp, cuda, onnxruntime, inductor, openvino, tvm or iree");
}

TEST(BackendTable, AnUnknownBackendIsRefusedWithTheChoices) {
  EXPECT_EQ(find_backend("xla"), nullptr);
  try {
    backend_named("xla");
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()), "unknown backend 'xla' (expected eager, aot_eager, cpp, cuda, onnxruntime, inductor, openvino, tvm or iree)");
  }
  CompileOptions o;
  o.backend = "xla";
  EXPECT_THROW(compile_graph(parsed(), o), UserError);
}

// Every backend of reprokit's own gives the reference's answer (cuda needs a GPU; onnxruntime has
// its tests in tests/campaign/ort_check_test.cpp, where Node.js and onnxruntime-node are checked for;
// inductor, openvino, tvm and iree in python/tests, where their Python packages are).
TEST(BackendTable, EveryRowThatRunsHereMatchesTheReference) {
  for (const Backend& b : backend_table()) {
    if (b.name == "cuda" || b.name == "onnxruntime" || b.name == "inductor" || b.name == "openvino" || b.name == "tvm" || b.name == "iree") continue;
    SCOPED_TRACE(std::string(b.name));
    CompileOptions o = cpp_options();
    o.backend = std::string(b.name);
    EXPECT_LT(max_error_vs_f64(parsed(), o), 1e-5);
  }
}

// The columns say what each backend does: eager interprets the captured graph (a decomposed op
// never appears), the code generators record their passes.
TEST(BackendTable, TheColumnsSayWhatTheBackendsDo) {
  EXPECT_FALSE(backend_named("eager").has_aot_stage);
  EXPECT_FALSE(backend_named("eager").runs_passes);
  EXPECT_TRUE(backend_named("aot_eager").has_aot_stage);
  EXPECT_FALSE(backend_named("aot_eager").runs_passes);
  for (const char* name : {"cpp", "cuda"}) {
    EXPECT_TRUE(backend_named(name).has_aot_stage) << name;
    EXPECT_TRUE(backend_named(name).runs_passes) << name;
  }
  CompileOptions o;
  o.backend = "cpp";
  EXPECT_TRUE(passes_run(o));
  o.run_passes = false;
  EXPECT_FALSE(passes_run(o));
  o.run_passes = true;
  o.backend = "aot_eager";
  EXPECT_FALSE(passes_run(o));
  EXPECT_FALSE(backend_named("onnxruntime").has_aot_stage);
  EXPECT_FALSE(backend_named("onnxruntime").runs_passes);
  for (const char* name : {"inductor", "openvino", "tvm", "iree"}) {  // foreign compilers get the captured graph
    EXPECT_FALSE(backend_named(name).has_aot_stage) << name;
    EXPECT_FALSE(backend_named(name).runs_passes) << name;
  }
  // The ops each one's findings are named in: what it reads.
  for (const char* name : {"eager", "aot_eager", "cpp", "cuda"}) EXPECT_EQ(backend_named(name).ops, OpLanguage::reprokit) << name;
  for (const char* name : {"onnxruntime", "openvino", "tvm", "iree"}) EXPECT_EQ(backend_named(name).ops, OpLanguage::onnx) << name;
  EXPECT_EQ(backend_named("inductor").ops, OpLanguage::aten);
  // The cpp backend's source is C++ generated from the lowered graph; eager has none.
  o = cpp_options();
  EXPECT_NE(compile_graph(parsed(), o)->source().find("exp"), std::string::npos) << "softmax was not decomposed for cpp";
  o.backend = "eager";
  EXPECT_EQ(compile_graph(parsed(), o)->source(), "");
}
