// The node memo's keys and store, for the interpreter (see reprokit/runtime/node_memo.h).
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "reprokit/ir/graph.h"
#include "reprokit/runtime/interpreter.h"
#include "reprokit/runtime/tensor.h"

namespace reprokit::node_memo {

// 128 bits, two independently mixed halves: a false match would give a candidate another
// node's values.
struct Key {
  uint64_t a = 0, b = 0;
  bool operator==(const Key& o) const { return a == o.a && b == o.b; }
};

// Whether this run may use the memo: remembering is on and the run draws nothing at random.
bool applies(const InterpretOptions& o);
// What of the options changes a node's result.
Key of_run(const InterpretOptions& o);
// A graph input by its content (dtype, shape and values).
Key of_input(const Tensor& t, const Key& run);
// A node by its op, attributes, type, literals and the keys of its value operands (in order).
Key of_node(const Node& n, const std::vector<Key>& value_operands, const Key& run);

std::optional<Tensor> find(const Key& k);
void keep(const Key& k, const Tensor& value);

}  // namespace reprokit::node_memo
