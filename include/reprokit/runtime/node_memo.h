// Node results the reference interpreter remembers across runs in one process. The minifier's
// worker checks candidates that are parts of one model: a candidate that keeps a node and what
// feeds it, on the same input values, asks for the same float64 reference and the same noise-floor
// variants of that node as the original did. Each result is keyed by what determines it — the
// node (op, attributes, type), the keys of its operands, down to the content of the graph's
// inputs, and the run's options — so a remembered result is the one the kernel would compute, bit
// for bit, whatever the graph around it is called. Runs that draw random numbers along the graph
// (values +-1 ulp) are never remembered: their draws depend on the nodes before.
#pragma once
#include <cstddef>
#include <cstdint>

namespace reprokit {

// Turns remembering on for this process, holding at most `max_bytes` of results (the oldest are
// forgotten first; never more than a quarter of the memory budget or of the process's address-space
// limit); 0 turns it off and forgets.
void enable_node_memo(size_t max_bytes);

struct NodeMemoStats {
  uint64_t hits = 0, misses = 0;
  size_t bytes = 0;  // held now
};
NodeMemoStats node_memo_stats();

}  // namespace reprokit
