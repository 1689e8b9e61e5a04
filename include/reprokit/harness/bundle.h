// Bundles: one directory per failure (never overwritten) holding manifest.json (versioned), the
// real inputs as checksummed .npy files, and an executable minifier_launcher. Bundles are
// untrusted input: loading one reads only regular files below it, never through a symlink, and
// input files are named by the (validated) input names, never by paths from the manifest.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "reprokit/harness/repro_spec.h"

namespace reprokit {

constexpr int kBundleFormatVersion = 1;

struct Bundle {
  std::string dir;
  int format_version = kBundleFormatVersion;
  Graph graph;
  ReproSpec spec;
  int level = 2;
  std::vector<Tensor> inputs;  // one per graph input, in order
  uint64_t seed = 0;
  nlohmann::json environment;
};

// Creates a new directory under root (created if missing) named after the graph, stage and
// failure, writes everything and returns its path. Never reuses an existing directory.
std::string write_bundle(const std::string& root, const Graph& g, const std::vector<Tensor>& inputs, const ReproSpec& spec, int level, uint64_t seed);
// Records a failure (spec.expected) in an existing bundle's manifest, with the rest of the spec
// (what was learnt while it ran: the failing input samples) (the level-3 and timeout paths).
void update_bundle_failure(const std::string& dir, const ReproSpec& spec);
// Loads and validates a bundle: UserError naming the file for a missing manifest, bad JSON, an
// unknown format version or stage or backend, a missing, non-regular or symlinked input file, an
// input file other than inputs/<input name>.npy, or a checksum mismatch.
Bundle load_bundle(const std::string& dir);

// 64-bit FNV-1a of bytes, as "fnv1a64:<hex>" (the inputs' checksums).
std::string checksum(std::string_view bytes);
nlohmann::json environment_info();

}  // namespace reprokit
