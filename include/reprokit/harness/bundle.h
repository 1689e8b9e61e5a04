// Bundles: one directory per failure (never overwritten) holding manifest.json (versioned), the
// real inputs as checksummed .npy files, and an executable minifier_launcher.
#pragma once
#include <cstdint>
#include <string>
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
std::string write_bundle(const std::string& root, const Graph& g, const std::vector<Tensor>& inputs, const ReproSpec& spec,
                         int level, uint64_t seed);
// Records a failure in an existing bundle's manifest (the level-3 and timeout paths).
void update_bundle_failure(const std::string& dir, const Failure& failure);
// Loads and validates a bundle: UserError naming the file for a missing manifest, bad JSON, an
// unknown format version, a missing input file or a checksum mismatch.
Bundle load_bundle(const std::string& dir);

// 64-bit FNV-1a of a file's bytes, as hex (the inputs' checksums).
std::string file_checksum(const std::string& path);
nlohmann::json environment_info();

}  // namespace reprokit
