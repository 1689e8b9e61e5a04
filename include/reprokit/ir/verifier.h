// The verifier: checks every invariant of a Graph and (re)infers node types.
#pragma once
#include "reprokit/ir/graph.h"

namespace reprokit {

// Checks ops, arity, attributes, operand order (no use before definition, hence no cycle), unique
// names, inputs first, outputs in range, and re-infers every node's type, storing it. Throws
// VerifyError naming the graph and the node.
void verify(Graph& g);
void verify(Module& m);
// Checks one node (op, arity, operand order, attributes) and re-infers its type.
void verify_node(Graph& g, int id);

}  // namespace reprokit
