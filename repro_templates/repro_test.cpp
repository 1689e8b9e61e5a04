// reprokit regression test for graph {{GRAPH}}: fails while the bug is present.
// Build: cmake -S . -B build -DCMAKE_PREFIX_PATH=<reprokit install prefix> && cmake --build build && ./build/repro_test
#include <gtest/gtest.h>

#include <reprokit/harness/repro_file.h>

TEST(Repro, {{TEST_NAME}}) {
  // Expected failure while the bug is present: {{FAILURE}}
  reprokit::ReproFile r = reprokit::load_repro_file(REPRO_DIR "/repro.rk");
  reprokit::Failure f = reprokit::run_and_classify(r.spec, r.graph, r.inputs);
  EXPECT_FALSE(f.failed()) << f.kind_name() << ": " << f.message;
}
