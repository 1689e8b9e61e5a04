// Partitioner: splits a joint graph into a forward graph, which also returns the values the
// backward needs ("saved"), and a backward graph, which takes the saved values and the tangents.
#pragma once
#include <vector>

#include "reprokit/aot/autodiff.h"

namespace reprokit {

struct PartitionedGraphs {
  Graph forward;   // inputs: forward inputs; outputs: forward outputs, then saved values
  Graph backward;  // inputs: saved values, then tangents; outputs: gradients (JointGraph order)
  int num_forward_outputs = 0;
  int num_saved = 0;
  std::vector<int> grad_inputs;
};

PartitionedGraphs partition_joint_graph(const JointGraph& joint);

}  // namespace reprokit
