// libFuzzer target: the compile cache's record of an entry, the `<file>.digest` beside each object
// and library, which decides whether reprokit links or loads the entry. Each input is the digest
// file of one library; the entry must be taken as intact only when the record is the one its
// bytes give, and nothing else may happen (no exception: a bad record is no entry).
#include "fuzz_target.h"
#include "../../src/codegen/compile_cache.h"

using namespace reprokit;
using namespace reprokit::fuzz;

namespace {
fs::path g_entry;
std::string g_true_record;
}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  const fs::path cache = scratch_dir() / "cache";
  fs::create_directories(cache);
  g_entry = cache / "rk_0123456789abcdef.so";
  write_whole(g_entry,
              "\x7f"
              "ELF a library's bytes");
  record_digest(g_entry, g_entry);
  g_true_record = read_whole(g_entry.string() + ".digest");
  seed_empty_corpora(*argc, *argv, {{"true.digest", g_true_record}, {"other.digest", "fnv1a64 0000000000000000\n"}, {"empty.digest", ""}});
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view record = as_text(data, size);
  write_whole(g_entry.string() + ".digest", record);
  if (entry_intact(g_entry) != (record == g_true_record)) fail("entry_intact disagrees with the recorded digest");
  return 0;
}
