// Foreign names (ONNX's `/layer.0/Add_output_0`, `onnx::Gemm_12`, `input.1`) mapped into reprokit's
// name rule (names.h), deterministically and without collisions.
#pragma once
#include <string>
#include <string_view>
#include <unordered_map>

#include "reprokit/ir/builder.h"
#include "reprokit/ir/names.h"

namespace reprokit {

// The foreign name with every byte outside [A-Za-z0-9_.] replaced by '_', prefixed with "v_" when
// it does not start with [A-Za-z_] (also when empty), cut to max_length characters.
std::string sanitize_foreign_name(std::string_view name, size_t max_length = kMaxNameLength);

// Maps each foreign name once: the sanitised name when free, else the sanitised name (cut so the
// suffix fits) with _1, _2, ... Names are reserved in `taken`, which may also hold names made by
// other means; the same foreign names mapped in the same order give the same result.
class ForeignNames {
 public:
  explicit ForeignNames(NameSet& taken) : taken_(taken) {}
  const std::string& map(const std::string& foreign);
  const std::string* find(const std::string& foreign) const;  // nullptr when not mapped yet

 private:
  NameSet& taken_;
  std::unordered_map<std::string, std::string> map_;
};

}  // namespace reprokit
